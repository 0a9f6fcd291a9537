"""Loading the engine host for a front door, and the work done ahead of the first request.

``EngineLoader`` builds the ``EngineHost`` (engine/host.py: the Agent, its session store and
backend pool) on the first request that needs it, imports the engine's modules in a thread
one at a time, gathers the project facts at start-up so the first chat finds them ready,
prepares the model client where a session store exists, and gathers the facts again after
files change (once per burst). It knows nothing of pygls: the LSP server (lsp/server.py) and
the ACP agent can both use it; the front door passes in what it knows (its settings, its
workspace root, a fed Workspace, a way to keep a background task).

Light to import: the engine itself is imported in a thread when first needed.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from agentls.base import import_gc
from agentls.llm import tls

if TYPE_CHECKING:
    from agentls.engine.host import EngineHost
    from agentls.engine.prompt.levels_cache import ProjectContextCache
    from agentls.settings.config import Settings
    from agentls.workspace.fence import Workspace

log = logging.getLogger(__name__)
_T = TypeVar("_T")

FACTS_REFRESH_DELAY_S = 1.0  # after a file event, how long to wait for the burst to end


class EngineUnavailable(Exception):
    """The engine cannot be built here (no workspace folder, an unusable session store):
    the message says what to do. Front doors answer it as an error."""


class EngineLoader:
    def __init__(self, *, settings: Callable[[], Awaitable[Settings]],
                 root: Callable[[], Path | None], new_workspace: Callable[[], Workspace],
                 spawn: Callable[[Coroutine[Any, Any, Any]], object],
                 requests_started: Callable[[], int] = lambda: 0) -> None:
        self._settings = settings
        self._root = root
        self._new_workspace = new_workspace
        self._spawn = spawn
        self._requests_started = requests_started
        self.host: EngineHost | None = None  # built on first use
        self._lock: asyncio.Lock | None = None
        self._import_lock = asyncio.Lock()  # background imports, one at a time
        self._contexts: ProjectContextCache | None = None
        self._refresh_pending = False
        self._refresh: object = None  # the facts refresh waiting for a burst to end
        self._closed = False

    # --- the engine ------------------------------------------------------------------------

    async def engine(self) -> EngineHost:
        """The Agent with its store and backends, built on first use."""
        settings = await self._settings()
        if self.host is None:
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                if self.host is None:
                    self.host = await self._build(settings)
        return self.host

    async def _build(self, settings: Settings) -> EngineHost:
        root = self._root()
        if root is None:
            raise EngineUnavailable("AgentLS needs a workspace folder: open a folder in the "
                                    "editor, then try again.")
        # Importing the engine (openai, pydantic models) and opening the store take a while:
        # not on the event loop.
        module = await self.engine_module()
        contexts = await self._project_contexts()
        try:
            host: EngineHost = await asyncio.to_thread(module.EngineHost, settings, root,
                                                       contexts)
        except Exception as exc:  # an unwritable folder, a newer state.db ...
            log.exception("opening the session store in %s failed", root)
            raise EngineUnavailable(
                f"AgentLS cannot open its session store {root / '.agentls'}: {exc}. Make the "
                "folder writable (or move that file away), then try again.") from None
        return host

    def update(self, settings: Settings) -> None:
        if self.host is not None:
            self.host.update(settings)

    async def engine_module(self) -> ModuleType:
        """``agentls.engine.host``, imported in a thread, with the model client's TLS
        context being built meanwhile (``tls.start``: OpenSSL reads the CA store without the
        GIL). Whoever needs the engine first, the start-up work or a request that came before
        it, starts both: else the first backend would build the context on the event loop
        (~15 ms during which nothing is read or answered)."""
        await self._importing(tls.start)
        return await self.imported("agentls.engine.host")

    async def imported(self, name: str) -> ModuleType:
        """``name``, imported in a thread (not on the event loop). These imports run one at a
        time: the start-up work and a first request (the history a reloaded editor asks for
        at once) would otherwise import the engine's package tree in two threads, in
        different orders, which can deadlock or meet a module half made."""
        module = sys.modules.get(name)
        if module is not None and not getattr(module.__spec__, "_initializing", False):
            return module
        return await self._importing(lambda: import_gc.import_module(name))

    async def _importing(self, work: Callable[[], _T]) -> _T:
        """``work`` (which imports) in a thread, one such at a time (see ``imported``)."""
        async with self._import_lock:
            return await asyncio.to_thread(work)

    # --- ahead of the first request ---------------------------------------------------------

    async def _project_contexts(self) -> ProjectContextCache:
        """The engine's cache of project facts, made on first use (its modules imported in a
        thread)."""
        if self._contexts is None:
            module = await self.imported("agentls.engine.prompt.levels_cache")
            if self._contexts is None:
                self._contexts = module.ProjectContextCache()
        assert self._contexts is not None
        return self._contexts

    async def warm_up(self, also_import: Iterable[str] = ()) -> None:
        """Right after start-up: import the engine (and ``also_import``, what the front door's
        first request imports) and gather the project facts in the background, so the first
        request finds them ready. Creates no file (the session store opens on the first
        request that needs it) and never blocks a request: the work runs in threads and a
        git subprocess. (Gathering the facts while the engine imports was tried: no faster,
        the import holds the interpreter either way.)"""
        if self._root() is None:
            return
        await self._settings()
        started = time.perf_counter()
        contexts = await self._project_contexts()
        # Imported now, in a thread, while nobody waits: the engine's heaviest imports
        # (openai), so the first chat does not pay for them.
        await self.engine_module()
        for name in also_import:
            await self.imported(name)
        gathering = time.perf_counter()
        await contexts.refresh(self._new_workspace())
        log.info("project facts gathered in the background (%.0f ms)",
                 (time.perf_counter() - gathering) * 1000)
        await self._prepare_engine()
        log.info("start-up work done in the background (%.0f ms): the first chat finds the "
                 "project facts and the engine ready", (time.perf_counter() - started) * 1000)

    async def _prepare_engine(self) -> None:
        """Where an earlier run left a session store, open it, build the model client (SSL
        context, HTTP pool), rehearse its first request (llm/rehearsal.py: answered from
        memory) and start the MCP servers set to start = "session", so the first chat waits
        for none of it. No model connection is opened before a request."""
        root = self._root()
        if root is None or not (root / ".agentls" / "state.db").is_file():
            return
        started = time.perf_counter()
        try:
            host = await self.engine()
            if self._requests_started():
                # A chat came first: its own request does the first-time work; a rehearsal
                # now would only compete with it for the interpreter.
                log.info("engine opened in the background (%.0f ms); no rehearsal: a chat "
                         "already started", (time.perf_counter() - started) * 1000)
                return
            await self._importing(host.agent.prepare)
            await host.agent.start_mcp_servers(self._new_workspace())
        except Exception as exc:  # the first chat reports it to the person, with what to do
            log.warning("the engine was not prepared ahead of the first chat: %s", exc)
            return
        log.info("engine prepared in the background (%.0f ms)",
                 (time.perf_counter() - started) * 1000)

    def files_changed(self) -> None:
        """Files were saved, created or deleted: gather the facts again, once for a burst of
        events, and only if they were gathered before (nothing to refresh otherwise)."""
        if self._contexts is None or self._refresh_pending or self._closed:
            return
        self._refresh_pending = True
        self._refresh = self._spawn(self._refresh_facts_soon())

    async def _refresh_facts_soon(self) -> None:
        await asyncio.sleep(FACTS_REFRESH_DELAY_S)
        self._refresh_pending = False
        if self._closed or self._contexts is None:  # shut down meanwhile: nothing to refresh
            return
        started = time.perf_counter()
        await self._contexts.refresh(self._new_workspace(), after_change=True)
        log.info("project facts gathered in the background after files changed (%.0f ms)",
                 (time.perf_counter() - started) * 1000)

    async def aclose(self) -> None:
        # An exit right after a save must not wait for (or log the failure of) a refresh of
        # facts nobody will read: the pending one is dropped before it starts.
        self._closed = True
        refresh, self._refresh = self._refresh, None
        if isinstance(refresh, asyncio.Task) and not refresh.done():
            refresh.cancel()
            await asyncio.wait([refresh])
        if self.host is not None:
            host, self.host = self.host, None
            await host.aclose()
