"""The AgentLS language server: the composition root. State on one ``LanguageServer`` subclass
(implementing ``lsp.context.ServerContext``), features in modules.

Each feature module has a ``setup(server)`` that registers its handlers (esbonio style):
settings, documents, chat, code_actions, git_commands; features depend on the context, never
on this module or on each other (``make lint`` checks it, see docs/ARCHITECTURE.md). The
server holds what they share: the resolved settings, the run manager (queue, rate limit,
cancellation), the engine (built on first use), the workspace roots and the negotiated
position encoding.

Start-up imports pygls, lsprotocol and this package's light modules only: no ``openai``, no
pydantic, no database. Settings load after ``initialize`` has been answered, the engine on
the first request that needs it (both in threads, so the editor is never blocked).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import Callable, Coroutine, Generator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from cattrs import Converter
from lsprotocol import types as lsp
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)
from pygls.uris import to_fs_path

from agentls import __version__, import_gc
from agentls.llm import tls
from agentls.lsp import settings as lsp_settings
from agentls.lsp.context import ServerContext
from agentls.lsp.handlers import logged as logged  # re-exported for older imports
from agentls.lsp.handlers import refused_error as refused_error
from agentls.lsp.protocol import plain_response
from agentls.lsp.runs import RUN_IMPORTS, RunManager, TurnRefused
from agentls.redaction import redact_data

if TYPE_CHECKING:
    from agentls.config import Settings
    from agentls.engine.context_cache import ProjectContextCache
    from agentls.engine.host import EngineHost
    from agentls.tools.workspace import Workspace

log = logging.getLogger(__name__)
_T = TypeVar("_T")

SHUTDOWN_GRACE_S = 2.0  # how long shutdown waits for cancelled runs to settle
FACTS_REFRESH_DELAY_S = 1.0  # after a file event, how long to wait for the burst to end


class AgentProtocol(LanguageServerProtocol):
    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(
        self, params: lsp.InitializeParams
    ) -> Generator[Any, Any, lsp.InitializeResult]:
        _prefer_utf8(params.capabilities)
        return (yield from super().lsp_initialize(params))

    def _send_data(self, data: Any) -> None:
        # Every notification, question and error leaves through here with its secrets
        # redacted; edits (workspace/applyEdit, results) carry the agent's changes unaltered.
        method = getattr(data, "method", None)
        outgoing = method is not None and method != lsp.WORKSPACE_APPLY_EDIT
        if outgoing or getattr(data, "error", None) is not None:
            data = redact_data(json.loads(json.dumps(data, default=self._serialize_message)))
        super()._send_data(plain_response(data) if method is None else data)


def _prefer_utf8(capabilities: lsp.ClientCapabilities) -> None:
    """UTF-16 unless the client offers UTF-8 (pygls would take the client's first choice):
    reorder the offer before pygls negotiates, so the workspace and the answer agree."""
    general = capabilities.general
    if general is None or not general.position_encodings:
        return
    offered = [str(getattr(e, "value", e)) for e in general.position_encodings]
    if "utf-8" in offered:
        general.position_encodings = [lsp.PositionEncodingKind.Utf8] + [
            e for e, name in zip(general.position_encodings, offered, strict=True)
            if name != "utf-8"]


def _converter() -> Converter:
    """pygls's converter, but AgentLS's own methods get their params as plain dicts."""
    converter = default_converter()

    def keep_params(obj: dict[str, Any], cls: type) -> Any:
        return cls(**obj)

    converter.register_structure_hook(JsonRPCRequestMessage, keep_params)
    converter.register_structure_hook(JsonRPCNotification, keep_params)
    return converter


class AgentLanguageServer(ServerContext):
    def __init__(self) -> None:
        super().__init__("agentls", __version__, protocol_cls=AgentProtocol,
                         converter_factory=_converter,
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.initialization_options: Any = None
        self.pushed_settings: Mapping[str, Any] | None = None  # didChangeConfiguration push
        self.reported_settings_problems = ""
        self.resolved: lsp_settings.ResolvedSettings | None = None
        self.fetched_client: dict[str, Any] | None = None
        self._client_fetched = asyncio.Event()
        self.settings_listeners: list[Callable[[], None]] = []  # called after each reload
        self.file_listeners: list[Callable[[list[str]], None]] = []  # saved/changed file URIs
        self.runs = RunManager(self, lsp_settings.LspSettings())
        self._settings_task: asyncio.Task[lsp_settings.ResolvedSettings] | None = None
        self._engine: EngineHost | None = None
        self._engine_lock: asyncio.Lock | None = None
        self._import_lock = asyncio.Lock()  # background imports, one at a time
        self._background: set[asyncio.Task[Any]] = set()
        self._contexts: ProjectContextCache | None = None
        self._refresh_pending = False

    # --- workspace ----------------------------------------------------------------------------

    @property
    def roots(self) -> list[Path]:
        """The workspace folders, in the client's order (the root URI when there are none)."""
        uris = [f.uri for f in self.workspace.folders.values()] or (
            [self.workspace.root_uri] if self.workspace.root_uri else [])
        paths = [to_fs_path(uri) for uri in uris if uri.startswith("file:")]
        return [Path(p) for p in paths if p]

    @property
    def root(self) -> Path | None:
        """The first workspace folder: its ``.agentls/state.db`` holds the sessions."""
        roots = self.roots
        return roots[0] if roots else None

    @property
    def root_uri(self) -> str | None:
        root = self.root
        return root.as_uri() if root is not None else None

    @property
    def position_encoding(self) -> str:
        """The negotiated encoding: "utf-16" (LSP's default) or "utf-8" when offered."""
        encoding = self.workspace.position_encoding
        return str(getattr(encoding, "value", encoding) or "utf-16").lower()

    def new_workspace(self) -> Workspace:
        """A run's fenced Workspace over every root, fed the editor's unsaved buffers."""
        from agentls.lsp import documents
        from agentls.tools.workspace import Workspace

        workspace = Workspace(self.roots)
        documents.feed(self, workspace)
        return workspace

    # --- settings -----------------------------------------------------------------------------

    async def ready(self) -> lsp_settings.ResolvedSettings:
        """The settings, loaded once after ``initialize`` (or now, if a request came first)."""
        return await asyncio.shield(self._settings_loading())

    def _settings_loading(self) -> asyncio.Task[lsp_settings.ResolvedSettings]:
        """The first load of the settings, started if it has not been."""
        if self._settings_task is None:
            self._settings_task = asyncio.create_task(lsp_settings.reload(self))
        return self._settings_task

    async def client_section(self) -> dict[str, Any]:
        """The ``agentls`` section as the client sent it, as soon as it is fetched: before
        the engine settings are built from it (which imports pydantic and the settings
        models, ~60 ms after start-up). For features that read only their own keys."""
        self._settings_loading()
        await self._client_fetched.wait()
        assert self.fetched_client is not None
        return self.fetched_client

    def client_fetched(self, client: dict[str, Any]) -> None:
        self.fetched_client = client
        self._client_fetched.set()

    async def reload_settings(self) -> lsp_settings.ResolvedSettings:
        previous = self._settings_task
        if previous is not None and not previous.done():
            await asyncio.wait([previous])
        self._settings_task = asyncio.create_task(lsp_settings.reload(self))
        return await asyncio.shield(self._settings_task)

    def apply_settings(self, resolved: lsp_settings.ResolvedSettings) -> None:
        self.resolved = resolved
        self.runs.configure(resolved.lsp)
        if self._engine is not None:
            self._engine.update(resolved.settings)
        for listener in list(self.settings_listeners):
            try:
                listener()
            except Exception:  # one feature's failure must not stop the others' update
                log.exception("a settings listener failed")

    @property
    def settings(self) -> Settings:
        """The engine settings; only valid once ``await ready()`` has returned."""
        if self.resolved is None:
            raise RuntimeError("settings are not loaded yet: await ls.ready() first")
        return self.resolved.settings

    @property
    def client_settings(self) -> dict[str, Any]:
        """The ``agentls`` section as the client sent it (features read their own keys); the
        one fetched while it is being resolved, ``{}`` before."""
        if self.resolved is not None:
            return self.resolved.client
        return self.fetched_client or {}

    # --- the engine -----------------------------------------------------------------------------

    def engine_if_built(self) -> EngineHost | None:
        return self._engine

    async def engine(self) -> EngineHost:
        """The Agent with its store and backends, built on first use."""
        resolved = await self.ready()
        if self._engine is None:
            if self._engine_lock is None:
                self._engine_lock = asyncio.Lock()
            async with self._engine_lock:
                if self._engine is None:
                    root = self.root
                    if root is None:
                        raise TurnRefused("AgentLS needs a workspace folder: open a folder "
                                          "in the editor, then try again.")
                    # Importing the engine (openai, pydantic models) and opening the store
                    # take a while: not on the event loop.
                    module = await self._engine_module()
                    contexts = await self._project_contexts()
                    try:
                        self._engine = await asyncio.to_thread(module.EngineHost,
                                                               resolved.settings, root, contexts)
                    except Exception as exc:  # an unwritable folder, a newer state.db ...
                        log.exception("opening the session store in %s failed", root)
                        raise TurnRefused(
                            f"AgentLS cannot open its session store {root / '.agentls'}: "
                            f"{exc}. Make the folder writable (or move that file away), then "
                            "try again.") from None
        assert self._engine is not None
        return self._engine

    async def _engine_module(self) -> ModuleType:
        """``agentls.engine.host``, imported in a thread, with the model client's TLS
        context being built meanwhile (``tls.start``: OpenSSL reads the CA store without the
        GIL). Whoever needs the engine first, the start-up work or a chat that came before
        it, starts both: else the first backend would build the context on the event loop
        (~15 ms during which nothing is read or answered)."""
        await self._importing(tls.start)
        return await self._imported("agentls.engine.host")

    async def imported(self, name: str) -> ModuleType:
        return await self._imported(name)

    async def _imported(self, name: str) -> ModuleType:
        """``name``, imported in a thread (not on the event loop). These imports run one at a
        time: the start-up work and a first request (the history a reloaded editor asks for
        at once) would otherwise import the engine's package tree in two threads, in
        different orders, which can deadlock or meet a module half made."""
        module = sys.modules.get(name)
        if module is not None and not getattr(module.__spec__, "_initializing", False):
            return module
        return await self._importing(lambda: import_gc.import_module(name))

    async def _importing(self, work: Callable[[], _T]) -> _T:
        """``work`` (which imports) in a thread, one such at a time (see ``_imported``)."""
        async with self._import_lock:
            return await asyncio.to_thread(work)

    # --- project facts ahead of the first chat ---------------------------------------------------

    async def _project_contexts(self) -> ProjectContextCache:
        """The engine's cache of project facts, made on first use (its modules imported in a
        thread)."""
        if self._contexts is None:
            module = await self._imported("agentls.engine.context_cache")
            if self._contexts is None:
                self._contexts = module.ProjectContextCache()
        assert self._contexts is not None
        return self._contexts

    async def warm_up(self) -> None:
        """Right after ``initialized``: import the engine and gather the project facts in the
        background, so the first chat finds them ready. Creates no file (the session store
        opens on the first request that needs it) and never blocks a request: the work runs
        in threads and a git subprocess. (Gathering the facts while the engine imports was
        tried: no faster, the import holds the interpreter either way.)"""
        if not self.roots:
            return
        await self.ready()
        started = time.perf_counter()
        contexts = await self._project_contexts()
        # Imported now, in a thread, while nobody waits: the engine's heaviest imports
        # (openai), so the first chat does not pay for them.
        await self._engine_module()
        for name in RUN_IMPORTS:
            await self._imported(name)
        gathering = time.perf_counter()
        await contexts.refresh(self.new_workspace())
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
        root = self.root
        if root is None or not (root / ".agentls" / "state.db").is_file():
            return
        started = time.perf_counter()
        try:
            host = await self.engine()
            if self.runs.requested:
                # A chat came first: its own request does the first-time work; a rehearsal
                # now would only compete with it for the interpreter.
                log.info("engine opened in the background (%.0f ms); no rehearsal: a chat "
                         "already started", (time.perf_counter() - started) * 1000)
                return
            await self._importing(host.agent.prepare)
            await host.agent.start_mcp_servers(self.new_workspace())
        except Exception as exc:  # the first chat reports it to the person, with what to do
            log.warning("the engine was not prepared ahead of the first chat: %s", exc)
            return
        log.info("engine prepared in the background (%.0f ms)",
                 (time.perf_counter() - started) * 1000)

    def files_changed(self, uris: list[str]) -> None:
        """Files were saved, created or deleted: tell the features listening (the search
        index), then gather the facts again, once for a burst of events, and only if they were
        gathered before (nothing to refresh otherwise)."""
        for listener in list(self.file_listeners):
            try:
                listener(uris)
            except Exception:  # one feature's failure must not stop the others
                log.exception("a file-change listener failed")
        if self._contexts is None or self._refresh_pending:
            return
        self._refresh_pending = True
        self.spawn(self._refresh_facts_soon())

    async def _refresh_facts_soon(self) -> None:
        await asyncio.sleep(FACTS_REFRESH_DELAY_S)
        self._refresh_pending = False
        assert self._contexts is not None
        started = time.perf_counter()
        await self._contexts.refresh(self.new_workspace(), after_change=True)
        log.info("project facts gathered in the background after files changed (%.0f ms)",
                 (time.perf_counter() - started) * 1000)

    # --- housekeeping -----------------------------------------------------------------------------

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """A background task that is kept alive and whose failure is logged."""
        task = asyncio.create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background_done)
        return task

    def _background_done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())

    async def aclose(self) -> None:
        """On shutdown: stop the runs, let them settle their sessions, close the engine."""
        settling = self.runs.cancel_all()
        if settling:
            await asyncio.wait(settling, timeout=SHUTDOWN_GRACE_S)
        if self._engine is not None:
            engine, self._engine = self._engine, None
            await engine.aclose()


def create_server() -> AgentLanguageServer:
    import agentls.lsp.inline_completion as inline_completion
    import agentls.lsp.propose_edit as propose_edit
    from agentls.lsp import chat, code_actions, conversation, documents, git_commands, search_index

    server = AgentLanguageServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: AgentLanguageServer, params: lsp.InitializeParams) -> None:
        ls.initialization_options = params.initialization_options

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(ls: AgentLanguageServer, params: None) -> None:
        await ls.aclose()

    lsp_settings.setup(server)
    documents.setup(server)
    chat.setup(server)
    code_actions.setup(server)
    git_commands.setup(server)
    search_index.setup(server)
    inline_completion.setup(server)
    conversation.setup(server)
    propose_edit.setup(server)
    return server
