"""AgentLS as an ACP agent: the handlers of ``acp.Agent`` on the shared engine host.

One ``EngineHost`` per workspace folder (a session's ``cwd``), built on the first session
there; its settings are that folder's (user config, the project's ``.agentls/config.toml``
screened as for any editor that has not said the workspace is trusted, environment). A
session's turn runs the engine with an ``AcpFrontend``; its ChangeSet then goes through the
review (acp/review.py). One prompt at a time per session: a second one while the first runs
is refused with the reason.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.schema import (
    AgentCapabilities,
    AvailableCommand,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from acp import PROTOCOL_VERSION, RequestError
from agentls import __version__
from agentls.acp import session_options
from agentls.acp.images import check_takes_images, takes_images
from agentls.acp.prompt_parts import (
    SLASH_COMMANDS,
    error_text,
    expand_slash_command,
    prompt_parts,
    workspace_folder,
)

if TYPE_CHECKING:
    from acp.interfaces import Client
    from acp.schema import ClientCapabilities

    from agentls.acp.frontend import AcpFrontend
    from agentls.engine.host import EngineHost
    from agentls.workspace.fence import Workspace

log = logging.getLogger(__name__)

SESSION_BUSY = -32002
SHUTDOWN_GRACE_S = 3.0  # how long a closing connection waits for cancelled turns to settle
STOP_REASONS = {"done": "end_turn", "max_iterations": "max_turn_requests",
                "cancelled": "cancelled", "no_progress": "end_turn", "timeout": "end_turn",
                "error": "end_turn", "max_tokens": "max_tokens", "refusal": "refusal"}


@dataclass
class AcpSession:
    id: str
    root: Path
    host: EngineHost
    mode: str
    notices: list[str] = field(default_factory=list)
    turn: asyncio.Task[PromptResponse] | None = None
    cancelled: bool = False


class AgentLsAcp:
    """The ``acp.Agent`` implementation (methods named as the SDK routes them)."""

    def __init__(self) -> None:
        self._conn: Client | None = None
        self._client: ClientCapabilities | None = None
        self._hosts: dict[Path, EngineHost] = {}
        self._host_lock = asyncio.Lock()
        self._sessions: dict[str, AcpSession] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    @property
    def conn(self) -> Client:
        assert self._conn is not None, "on_connect comes before any request"
        return self._conn

    # --- initialize ------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **_: Any) -> InitializeResponse:
        self._client = client_capabilities
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_info=Implementation(name="agentls", title="AgentLS", version=__version__),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=takes_images(), audio=False,
                                                       embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            auth_methods=[])

    async def authenticate(self, method_id: str, **_: Any) -> None:
        raise RequestError.invalid_params({"message": "AgentLS needs no sign-in: its model "
                                           "backends are set in its configuration"})

    # --- sessions ------------------------------------------------------------------------

    async def new_session(self, cwd: str, additional_directories: Any = None,
                          mcp_servers: Any = None, **_: Any) -> NewSessionResponse:
        root = workspace_folder(cwd)
        host, notices = await self._host(root)
        settings = host.agent.settings
        info = await asyncio.to_thread(
            host.store.create_session, backend=settings.backend,
            model=settings.active_backend.model, mode="chat",
            metadata={"acp": True})
        from agentls.engine.modes import DEFAULT_MODE

        session = AcpSession(info.id, root, host, DEFAULT_MODE, list(notices))
        self._mcp(session, mcp_servers)
        self._sessions[info.id] = session
        self._later(self._announce(session))
        return NewSessionResponse(session_id=info.id, modes=self._modes(session),
                                  config_options=self._config_options(session))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           additional_directories: Any = None, **_: Any) -> LoadSessionResponse:
        root = workspace_folder(cwd)
        host, notices = await self._host(root)
        stored = await asyncio.to_thread(host.store.get_session, session_id)
        if stored is None:
            raise RequestError.invalid_params({
                "message": f"AgentLS has no session {session_id!r} in {root}: pick one from "
                           "session/list, or start a new one with session/new"})
        from agentls.engine import modes

        session = self._sessions.get(session_id) or AcpSession(
            session_id, root, host, modes.of_session(stored).id, list(notices))
        self._mcp(session, mcp_servers)
        self._sessions[session_id] = session
        await self._replay(session)
        self._later(self._announce(session))
        return LoadSessionResponse(modes=self._modes(session),
                                   config_options=self._config_options(session))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **_: Any) -> ListSessionsResponse:
        from datetime import UTC, datetime

        roots = [workspace_folder(cwd)] if cwd else list(self._hosts)
        out = []
        for root in roots:
            host, _notices = await self._host(root)
            for info in await asyncio.to_thread(host.store.list_sessions, 200):
                out.append(SessionInfo(
                    session_id=info.id, cwd=str(root), title=info.title,
                    updated_at=datetime.fromtimestamp(info.updated_at, UTC).isoformat()))
        return ListSessionsResponse(sessions=out)

    async def set_session_mode(self, session_id: str, mode_id: str,
                               **_: Any) -> SetSessionModeResponse:
        from agentls.engine import modes

        session = self._session(session_id)
        try:  # kept with the session: its next turn, here or in an editor, runs in it
            await asyncio.to_thread(modes.set_session_mode, session.host.store, session_id,
                                    mode_id)
        except modes.UnknownMode as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from None
        session.mode = mode_id
        await self.conn.session_update(session_id=session_id, update=CurrentModeUpdate(
            session_update="current_mode_update", current_mode_id=mode_id))
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **_: Any) -> SetSessionConfigOptionResponse:
        """The session's ``mode`` and ``model`` selectors (ACP's way to set the model)."""
        session = self._session(session_id)
        if config_id == "mode":
            await self.set_session_mode(session_id, str(value))
        elif config_id == "model":
            await self._set_model(session, str(value))
        else:
            raise RequestError.invalid_params({"message": f"no setting {config_id!r}; the "
                                               "settings are mode and model"})
        options = self._config_options(session)
        await self.conn.session_update(session_id=session_id, update=ConfigOptionUpdate(
            session_update="config_option_update", config_options=options))
        return SetSessionConfigOptionResponse(config_options=options)

    async def _set_model(self, session: AcpSession, backend: str) -> None:
        from agentls.engine.model_choice import set_session_model

        backends = session_options.model_servers(session.host.agent.settings)
        if backend not in backends:
            raise RequestError.invalid_params({"message": f"no model {backend!r}; the models are "
                                               "the configured model servers: "
                                               + ", ".join(sorted(backends))})
        await asyncio.to_thread(set_session_model, session.host.store, session.id, backend,
                                backends[backend].model)

    # --- a turn ----------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        session = self._session(session_id)
        if session.turn is not None and not session.turn.done():
            raise RequestError(SESSION_BUSY, "AgentLS: this session is already answering a "
                               "prompt; wait for its answer, or send session/cancel, then "
                               "prompt again", {"sessionId": session_id})
        from agentls.acp.frontend import AcpFrontend, client_reader  # not at start-up

        session.cancelled = False
        workspace = self._workspace(session)
        fs = self._client.fs if self._client is not None else None
        if fs is not None and fs.read_text_file:  # the editor's text, unsaved edits included
            workspace.buffer_source = client_reader(self.conn, session_id)
        frontend = AcpFrontend(self.conn, session_id, workspace)
        if self._client is not None and self._client.terminal:
            frontend.use_terminal()  # sandboxed commands shown live in the editor
        inner = asyncio.create_task(self._turn(session, prompt, frontend),
                                    name=f"acp-turn-{session_id}")
        session.turn = inner
        try:
            try:
                await asyncio.wait([inner])
            except asyncio.CancelledError:  # the connection is closing: stop the turn too
                inner.cancel()
                raise
            if inner.cancelled():
                return PromptResponse(stop_reason="cancelled")
            return inner.result()
        finally:
            try:
                await frontend.drain()
            except asyncio.CancelledError:
                frontend.stop()
                raise
            finally:
                session.turn = None

    async def _turn(self, session: AcpSession, prompt: list[Any],
                    frontend: AcpFrontend) -> PromptResponse:
        from agentls.engine.loop.agent import RunRequest
        from agentls.engine.review_notes import record_withdrawn
        from agentls.llm.backend import BackendError

        host = session.host
        for notice in session.notices:
            frontend.note(notice)
        session.notices.clear()
        text, attachments, notes, images = prompt_parts(prompt, frontend.workspace)
        if images:
            check_takes_images(session.host, session.id)
        for note in notes:
            frontend.note(note)
        if not text.strip() and not attachments.files and not images:
            raise RequestError.invalid_params({"message": "the prompt has no text: type a "
                                               "request, or attach a file"})
        text = expand_slash_command(text)
        # The session's mode (engine/modes.py, stored with it) narrows the toolbox; the
        # notes the last review left are the engine's too (engine/review_notes.py).
        request = RunRequest(text, attachments=attachments, images=images)
        workspace = frontend.workspace
        run_id = host.agent.new_run_id()
        try:
            result = await host.agent.run(session.id, request, frontend, workspace,
                                          run_id=run_id)
        except BackendError as exc:
            frontend.send(error_text(f"{exc} ({exc.hint})" if exc.hint else str(exc)))
            return PromptResponse(stop_reason="end_turn")
        except asyncio.CancelledError:
            if not workspace.changeset.is_empty():
                record_withdrawn(host.store, session.id)
            raise
        if result.stop_reason == "cancelled":
            if not result.changeset.is_empty():
                record_withdrawn(host.store, session.id, result.actions_message_id)
            return PromptResponse(stop_reason="cancelled")
        if result.send_changes and not result.changeset.is_empty():
            from agentls.acp.review import review

            fs = self._client.fs if self._client is not None else None
            try:
                await review(self.conn, frontend, host.store, session.id, result, workspace,
                             client_writes=bool(fs and fs.write_text_file))
            except asyncio.CancelledError:
                record_withdrawn(host.store, session.id, result.actions_message_id)
                raise
        return PromptResponse(stop_reason=STOP_REASONS.get(result.stop_reason, "end_turn"))

    async def cancel(self, session_id: str, **_: Any) -> None:
        """Stops the session's turn: the model stream, its commands, a permission request
        the client has not answered. The prompt then answers ``cancelled``."""
        session = self._sessions.get(session_id)
        if session is None or session.turn is None or session.turn.done():
            return
        session.cancelled = True
        session.turn.cancel()

    # --- helpers ---------------------------------------------------------------------------

    def _mcp(self, session: AcpSession, offered: list[Any] | None) -> None:
        """The client's MCP servers, for this session's runs (engine's MCP hub)."""
        from agentls.acp.mcp_servers import session_servers

        if not offered:
            return
        servers, notes = session_servers(offered)
        session.notices.extend(notes)
        try:
            session.host.agent.mcp.set_session_servers(session.id, servers)
        except ValueError as exc:  # pydantic's too: a server the settings would refuse
            raise RequestError.invalid_params({"message": f"mcpServers: {exc}"}) from None

    def _session(self, session_id: str) -> AcpSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({
                "message": f"AgentLS has no session {session_id!r} on this connection: start "
                           "one with session/new (or session/load) first"})
        return session

    def _workspace(self, session: AcpSession) -> Workspace:
        from agentls.workspace.fence import Workspace

        return Workspace([session.root])

    async def _host(self, root: Path) -> tuple[EngineHost, list[str]]:
        async with self._host_lock:
            known = self._hosts.get(root)
            if known is not None:
                return known, []
            try:
                host, notices = await asyncio.to_thread(_build_host, root)
            except Exception as exc:
                log.exception("opening AgentLS in %s failed", root)
                raise RequestError.internal_error({
                    "message": f"AgentLS cannot open {root}: {exc}. Fix the configuration "
                               "(agentls config list) or make the folder writable, then try "
                               "again"}) from None
            self._hosts[root] = host
            return host, notices

    def _modes(self, session: AcpSession) -> SessionModeState:
        return session_options.modes(session.mode)

    def _config_options(self, session: AcpSession) -> list[Any]:
        stored = session.host.store.get_session(session.id)
        return session_options.config_options(session.host.agent.settings, session.mode,
                                              stored.backend if stored is not None else None)

    async def _announce(self, session: AcpSession) -> None:
        await self.conn.session_update(session_id=session.id, update=AvailableCommandsUpdate(
            session_update="available_commands_update", available_commands=[
                AvailableCommand(name=name, description=description)
                for name, (description, _) in SLASH_COMMANDS.items()]))

    async def _replay(self, session: AcpSession) -> None:
        from agentls.acp.replay import replay

        await replay(self.conn, session.host.store, session.id, self._workspace(session))

    def _later(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background work failed", exc_info=task.exception())

    async def aclose(self) -> None:
        """The client closed the stream: stop what runs (each turn settles its session), then
        close the engines (MCP servers, model clients, stores)."""
        turns = [s.turn for s in self._sessions.values()
                 if s.turn is not None and not s.turn.done()]
        for session in self._sessions.values():
            session.cancelled = True
        for turn in turns:
            turn.cancel()
        if turns:
            _, stuck = await asyncio.wait(turns, timeout=SHUTDOWN_GRACE_S)
            for turn in stuck:
                log.warning("a turn did not stop within %s s: %s", SHUTDOWN_GRACE_S,
                            turn.get_name())
        for host in self._hosts.values():
            await host.aclose()


def _build_host(root: Path) -> tuple[EngineHost, list[str]]:
    from agentls.engine.host import EngineHost
    from agentls.settings import config

    loaded = config.load(root)
    return EngineHost(loaded.settings, root), list(loaded.notices)


