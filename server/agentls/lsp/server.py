"""The AgentLS language server: the composition root. It builds the context features use
(``lsp.context.ServerContext``) and registers the features; it holds no feature's logic.

The context's parts live in their own modules: the workspace folders and a run's Workspace
(lsp/services/workspace_roots.py), the editor settings' life (lsp/services/settings_state.py), the
run manager
(lsp/services/runs.py, given a ``RunContext``), the engine loader (engine/host_loader.py: the engine
built on first use, the start-up work, the facts refresh); pygls's protocol as AgentLS speaks
it is lsp/transport/json_rpc.py. Each feature module has a ``setup(server)`` that registers its
handlers (esbonio style); features depend on the context, never on this module or on each
other (``make lint`` checks it, see docs/ARCHITECTURE.md).

Start-up imports pygls, lsprotocol and this package's light modules only: no ``openai``, no
pydantic, no database. Settings load after ``initialize`` has been answered, the engine on
the first request that needs it (both in threads, so the editor is never blocked).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from types import ModuleType
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from agentls import __version__
from agentls.engine.host_loader import EngineLoader, EngineUnavailable
from agentls.lsp.services import editor_settings as lsp_settings
from agentls.lsp.services.handlers import logged as logged  # re-exported for older imports
from agentls.lsp.services.handlers import refused_error as refused_error
from agentls.lsp.services.resolved_settings import LspSettings, ResolvedSettings
from agentls.lsp.services.runs import RUN_IMPORTS, RunContext, RunManager
from agentls.lsp.services.settings_state import SettingsState
from agentls.lsp.services.turn import TurnRefused
from agentls.lsp.services.workspace_roots import WorkspaceRoots
from agentls.lsp.transport.json_rpc import AgentProtocol, converter

if TYPE_CHECKING:
    from agentls.engine.host import EngineHost
    from agentls.settings.config import Settings

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_S = 2.0  # how long shutdown waits for cancelled runs to settle


class AgentLanguageServer(SettingsState, WorkspaceRoots):
    def __init__(self) -> None:
        super().__init__("agentls", __version__, protocol_cls=AgentProtocol,
                         converter_factory=converter,
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.file_listeners: list[Callable[[list[str]], None]] = []  # saved/changed file URIs
        self.document_listeners: list[Callable[[Any], None]] = []  # didOpen/Change/Close
        self._background: set[asyncio.Task[Any]] = set()
        self.runs: RunManager = RunManager(
            RunContext(editor=self, new_workspace=self.new_workspace, root=lambda: self.root,
                       spawn=self.spawn), LspSettings())
        # The engine, its imports, the facts ahead of the first chat (engine/host_loader.py).
        self.engines = EngineLoader(settings=self._engine_settings, root=lambda: self.root,
                                    new_workspace=self.new_workspace, spawn=self.spawn,
                                    requests_started=lambda: self.runs.requested)

    def apply_settings(self, resolved: ResolvedSettings) -> None:
        self.runs.configure(resolved.lsp)
        self.engines.update(resolved.settings)
        super().apply_settings(resolved)  # then the features' listeners

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
    import agentls.lsp.features.inline_completion as inline_completion
    import agentls.lsp.features.propose_edit as propose_edit
    from agentls.lsp.features import chat, conversation, git_commands
    from agentls.lsp.features import index_upkeep as search_index
    from agentls.lsp.features.code_actions import feature as code_actions
    from agentls.lsp.features.next_edit import suggestions as next_edit
    from agentls.lsp.services import documents

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
    next_edit.setup(server)
    conversation.setup(server)
    propose_edit.setup(server)
    return server
