"""The AgentLS language server: the composition root. State on one ``LanguageServer`` subclass
(implementing ``lsp.context.ServerContext``), features in modules.

Each feature module has a ``setup(server)`` that registers its handlers (esbonio style);
features depend on the context, never on this module or on each other (``make lint`` checks
it, see docs/ARCHITECTURE.md). The server holds what they share: the resolved settings, the
run manager (lsp/runs.py), the engine loader (engine/host_loader.py: the engine built on
first use, the start-up work, the facts refresh), the workspace roots and the negotiated
position encoding; pygls's protocol as AgentLS speaks it is lsp/json_rpc.py.

Start-up imports pygls, lsprotocol and this package's light modules only: no ``openai``, no
pydantic, no database. Settings load after ``initialize`` has been answered, the engine on
the first request that needs it (both in threads, so the editor is never blocked).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.uris import to_fs_path

from agentls import __version__
from agentls.engine.host_loader import EngineLoader, EngineUnavailable
from agentls.lsp import settings as lsp_settings
from agentls.lsp.context import ServerContext
from agentls.lsp.handlers import logged as logged  # re-exported for older imports
from agentls.lsp.handlers import refused_error as refused_error
from agentls.lsp.json_rpc import AgentProtocol, converter
from agentls.lsp.runs import RUN_IMPORTS, RunManager
from agentls.lsp.turn import TurnRefused

if TYPE_CHECKING:
    from agentls.config import Settings
    from agentls.engine.host import EngineHost
    from agentls.tools.workspace import Workspace

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_S = 2.0  # how long shutdown waits for cancelled runs to settle


class AgentLanguageServer(ServerContext):
    def __init__(self) -> None:
        super().__init__("agentls", __version__, protocol_cls=AgentProtocol,
                         converter_factory=converter,
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.initialization_options: Any = None
        self.pushed_settings: Mapping[str, Any] | None = None  # didChangeConfiguration push
        self.reported_settings_problems = ""
        self.resolved: lsp_settings.ResolvedSettings | None = None
        self.fetched_client: dict[str, Any] | None = None
        self._client_fetched = asyncio.Event()
        self.settings_listeners: list[Callable[[], None]] = []  # called after each reload
        self.file_listeners: list[Callable[[list[str]], None]] = []  # saved/changed file URIs
        self.runs: RunManager = RunManager(self, lsp_settings.LspSettings())
        self._settings_task: asyncio.Task[lsp_settings.ResolvedSettings] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        # The engine, its imports, the facts ahead of the first chat (engine/host_loader.py).
        self.engines = EngineLoader(settings=self._engine_settings, root=lambda: self.root,
                                    new_workspace=self.new_workspace, spawn=self.spawn,
                                    requests_started=lambda: self.runs.requested)

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
        self.engines.update(resolved.settings)
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

    # --- the engine (engine/host_loader.py) ------------------------------------------------------

    async def _engine_settings(self) -> Settings:
        return (await self.ready()).settings

    def engine_if_built(self) -> EngineHost | None:
        return self.engines.host

    async def engine(self) -> EngineHost:
        """The Agent with its store and backends, built on first use."""
        try:
            return await self.engines.engine()
        except EngineUnavailable as exc:
            raise TurnRefused(str(exc)) from None

    async def imported(self, name: str) -> ModuleType:
        return await self.engines.imported(name)

    async def warm_up(self) -> None:
        await self.engines.warm_up(RUN_IMPORTS)

    def files_changed(self, uris: list[str]) -> None:
        """Files were saved, created or deleted: tell the features listening (the search
        index), then the project facts (gathered again once per burst)."""
        for listener in list(self.file_listeners):
            try:
                listener(uris)
            except Exception:  # one feature's failure must not stop the others
                log.exception("a file-change listener failed")
        self.engines.files_changed()

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
        await self.engines.aclose()


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
