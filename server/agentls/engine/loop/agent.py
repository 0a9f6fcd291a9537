"""The agent loop both front-ends share: prompt, stream, run tools, feed results back, repeat.

A run ends when the model answers without tool calls (``done``), or at ``max_iterations``,
the run's ``timeout``, a cancellation, ``no_progress`` (the same call or the same answer
three times in a row), or an ``error``. Whatever happens, the session stays consistent:
every assistant tool call in the store gets its tool result, so the next request is valid.

Here: one run's life, from its first request to its result (the run, its loop, the model's
streamed answer, the check of its own work). The run's user message is made and stored by
``user_turn``, the tools it offers assembled by ``toolbox``, tool calls run by
``tool_dispatch``, the run's and session's state and its end kept by ``turns``, long
histories summarised by ``engine/prompt/compaction``, its work checked by ``engine/check``.
It stays one module: what is left is that one story, and cutting it would scatter it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from agentls.engine import model_choice as models
from agentls.engine.events import (
    Frontend,
    ReasoningDelta,
    RetryEvent,
    StatusEvent,
    TextDelta,
)
from agentls.engine.loop.tool_dispatch import run_tools
from agentls.engine.loop.toolbox import run_tools_for
from agentls.engine.loop.turns import (
    RunResult,
    RunState,
    SessionState,
    StopReason,
    append_message,
    close_open_calls,
    finish_run,
    keep_streamed,
    repeated_answer,
    repeated_calls,
    request_history,
    text_calls_record,
)
from agentls.engine.loop.user_turn import store_user_turn
from agentls.engine.mcp_tools import secret_env
from agentls.engine.prompt import levels as context
from agentls.engine.prompt.compaction import maybe_compact
from agentls.engine.prompt.history import (
    TrimResult,
    check_fits,
    prompt_budget,
    trim_for_budget,
    trim_harder,
)
from agentls.engine.prompt.levels_cache import ProjectContextCache
from agentls.engine.prompt.tokens import TokenEstimator
from agentls.engine.run_request import RunRequest as RunRequest  # where front doors found it
from agentls.engine.sessions.queue import SessionQueue
from agentls.engine.sessions.store import SessionStore
from agentls.index.from_settings import IndexHub
from agentls.llm.backend import Backend, BackendError, RetryNotice
from agentls.llm.messages import ChatRequest, ChatResponse, Message, ToolSpec
from agentls.llm.rehearsal import rehearse
from agentls.settings.config import Settings
from agentls.tools.permission_gate import PermissionPolicy
from agentls.tools.registry import prepare_schemas
from agentls.workspace.fence import Workspace

if TYPE_CHECKING:  # the hub (and the MCP client) is imported by the first run that needs it
    from agentls.langservers.servers import LangServers
    from agentls.tools.mcp.hub import McpHub

log = logging.getLogger(__name__)

MAX_LENGTH_CONTINUATIONS = 2
# Sessions whose prompt levels and approvals stay in memory; a long-lived server creates a
# session per chat and per code action, so the oldest are forgotten (and rebuilt if used).
MAX_SESSION_STATES = 64
CONTINUE_PROMPT = (
    "Your previous answer was cut off at the output limit. Continue exactly where it stopped, "
    "more concisely; do not repeat what you already wrote."
)


class Agent:
    def __init__(
        self,
        settings: Settings,
        backends: Any,  # agentls.llm.pool.BackendPool, or anything with .get(name)
        store: SessionStore,
        *,
        estimator: TokenEstimator | None = None,
        policy: PermissionPolicy | None = None,
        queue_limit: int = 32,
        project_contexts: ProjectContextCache | None = None,
    ) -> None:
        self.settings = settings
        self.backends = backends
        self.store = store
        self.estimator = estimator or TokenEstimator()
        self._policy = policy  # None: the settings' `permissions`, read at each run
        self.queue = SessionQueue(queue_limit)
        # Search indexes open on the first search_semantic call (front-ends share it).
        self.search_hub = IndexHub(settings)
        # MCP servers: started on the first run that offers tools, kept until aclose().
        self._mcp: McpHub | None = None
        # The project's language servers: made on the first run, started on first use.
        self._langservers: LangServers | None = None
        self._sessions: OrderedDict[str, SessionState] = OrderedDict()
        self._tasks: dict[str, asyncio.Task[RunResult]] = {}
        # Shared with whoever gathers them ahead of the first run (an editor, at start-up).
        self.project_contexts = project_contexts or ProjectContextCache()

    # --- public API -----------------------------------------------------------------------

    @property
    def mcp(self) -> McpHub:
        """The MCP hub, made on first use: a run with no MCP server (configured, or brought
        by its session) never imports it."""
        if self._mcp is None:
            from agentls.tools.mcp.hub import McpHub

            self._mcp = McpHub(self.settings.mcp, self.settings.sandbox,
                               secret_env=secret_env(self.settings))
        return self._mcp

    async def aclose(self) -> None:
        """End what the engine started for its runs (MCP servers, language servers)."""
        if self._mcp is not None:
            await self._mcp.aclose()
        if self._langservers is not None:
            await self._langservers.aclose()

    async def code_intel(self, workspace: Workspace, frontend: Frontend
                         ) -> LangServers | None:
        """The language servers when one covers the workspace (its tools are offered then);
        a configured server that cannot be used is told once."""
        lsp = self.settings.lsp
        if not lsp.detect and not lsp.servers:
            return None
        if self._langservers is None:
            from agentls.langservers.servers import LangServers

            self._langservers = LangServers(lsp, self.settings.sandbox,
                                            secret_env=secret_env(self.settings))
        servers = self._langservers
        servers.configure(lsp, self.settings.sandbox, secret_env(self.settings))
        covers = await asyncio.to_thread(servers.covers, workspace)
        for note in servers.notes(workspace):
            frontend.on_event(StatusEvent(message=note, warning=True))
        return servers if covers else None

    async def start_mcp_servers(self, workspace: Workspace) -> None:
        """Start the MCP servers set to ``start = "session"`` now (the editor's server calls
        this at start-up); the others start with the first run that offers tools."""
        if self.settings.mcp.servers:
            self.mcp.configure(self.settings.mcp, self.settings.sandbox,
                               secret_env(self.settings))
            await self.mcp.start_session_servers(workspace)

    def new_run_id(self) -> str:
        return uuid.uuid4().hex[:12]

    def prepare(self) -> None:
        """Do now what the first run would do for the first time: the backend rehearses a
        request (llm/rehearsal.py) and the tools' schemas are built. Blocks: call it in a
        thread, ahead of the first run (the editor's server does, at start-up)."""
        rehearse(self.backends.get())
        prepare_schemas()

    async def run(
        self,
        session_id: str,
        request: RunRequest,
        frontend: Frontend,
        workspace: Workspace,
        *,
        run_id: str | None = None,
        session_held: bool = False,
    ) -> RunResult:
        """Run one request on a session; waits its turn in ``self.queue`` if the session is
        busy (``session_held``: the caller holds the session's turn already, as the editor
        does through the delivery of the edit: one queue per session, not two)."""
        run_id = run_id or self.new_run_id()
        turn = contextlib.nullcontext() if session_held else self.queue.turn(session_id)
        async with turn:
            inner = asyncio.create_task(
                self._run(session_id, run_id, request, frontend, workspace),
                name=f"agentls-run-{run_id}",
            )
            self._tasks[run_id] = inner
            try:
                return await asyncio.shield(inner)
            except asyncio.CancelledError:
                # Our caller was cancelled: stop the run, let it settle the session, re-raise.
                inner.cancel()
                await asyncio.wait([inner])
                raise
            finally:
                self._tasks.pop(run_id, None)

    def cancel(self, run_id: str) -> bool:
        """Stop a run; it ends with ``cancelled`` and its changes are not sent."""
        task = self._tasks.get(run_id)
        if task is None or task.done():
            return False
        task.cancel()
        return True

    def running(self) -> list[str]:
        return list(self._tasks)

    async def project_context(
        self, workspace: Workspace
    ) -> tuple[context.ProjectFacts, context.Instructions]:
        """Project facts and workspace instructions for a new session (prompt levels 2-3)."""
        return await self.project_contexts.get(workspace)

    # --- the run --------------------------------------------------------------------------

    async def _run(
        self,
        session_id: str,
        run_id: str,
        request: RunRequest,
        frontend: Frontend,
        workspace: Workspace,
    ) -> RunResult:
        session = self.store.get_session(session_id)
        if session is None:
            raise KeyError(f"no session {session_id!r}")
        state = self._session_state(session_id)
        run = RunState(run_id, session, [])
        stop: StopReason = "done"
        error: BackendError | None = None
        error_message = ""
        hint = ""
        timeout = request.timeout_s or self.settings.timeout_ms / 1000
        try:
            async with asyncio.timeout(timeout):
                # A long session is megabytes of stored JSON: read it off the event loop.
                run.history, seqs = await asyncio.to_thread(request_history, self.store,
                                                             session_id)
                backend: Backend = self.backends.get(session.backend)
                run.model = models.session_model(session, backend.model)
                if not state.system:  # levels 1-3: once per session, then never changed
                    state.facts, state.instructions = await self.project_context(workspace)
                    state.system = context.system_messages(state.facts, state.instructions)
                    summary = state.instructions.summary()
                    log.info("session %s: %s", session_id, summary)
                    frontend.on_event(StatusEvent(message=summary, topic="instructions"))
                run.history = await maybe_compact(
                    self.store, self.estimator, backend, session_id, run.history, seqs,
                    state.system, max_messages=self.settings.compaction.max_messages,
                    context_tokens=self._context_tokens(backend))
                await store_user_turn(
                    settings=self.settings, store=self.store, estimator=self.estimator,
                    search_hub=self.search_hub, run=run, request=request, frontend=frontend,
                    workspace=workspace, backend=backend, state=state,
                    context_tokens=self._context_tokens(backend))
                stop = await self._loop(run, request, frontend, workspace, backend, state)
        except TimeoutError:
            stop = "timeout"
            error_message = f"the run took longer than {timeout:g} s"
            hint = "raise timeout_ms or split the task"
            keep_streamed(self.store, run, stop)
        except asyncio.CancelledError:
            stop = "cancelled"
            keep_streamed(self.store, run, stop)
        except BackendError as exc:
            stop, error, error_message = "error", exc, str(exc)
            if exc.partial is not None and exc.partial.text:
                append_message(self.store, run, Message.assistant(exc.partial.text))
        except Exception as exc:  # a bug must end the run with a result, not leave it hanging
            log.exception("run %s failed", run_id)
            stop, error_message = "error", f"AgentLS failed unexpectedly: {exc}"
            hint = "see the AgentLS log; the session is kept, so you can ask again"
        finally:
            close_open_calls(self.store, run, stop)
            if run.user_message_id is not None:
                self.store.update_metadata(run.user_message_id, outcome=stop,
                                           ended_at=time.time())

        return await finish_run(self.store, run, stop, workspace, frontend, error,
                                error_message, hint)

    async def _loop(
        self,
        run: RunState,
        request: RunRequest,
        frontend: Frontend,
        workspace: Workspace,
        backend: Backend,
        state: SessionState,
    ) -> StopReason:
        code_intel = await self.code_intel(workspace, frontend)
        agent_config = self.settings.agent  # the check's settings, as the run started
        tools = await run_tools_for(
            settings=self.settings, policy=self._policy, mcp_started=self._mcp,
            mcp=lambda: self.mcp, search_hub=self.search_hub, code_intel=code_intel, run=run,
            request=request, frontend=frontend, workspace=workspace, state=state)
        specs = tools.specs
        max_iterations = request.max_iterations or self.settings.max_iterations
        continuations = 0
        key = (backend.name, run.model or backend.model)
        budget = prompt_budget(self._context_tokens(backend))
        trimmed: TrimResult | None = None

        while run.iterations < max_iterations:
            run.iterations += 1
            frontend.on_event(StatusEvent(message=f"thinking (step {run.iterations})",
                                          iteration=run.iterations))
            # Passing the previous trim keeps the start of the request put: prefix caches hit.
            trimmed = trim_for_budget(state.system, run.history, [], budget, self.estimator, key,
                                      tools=specs, previous=trimmed)
            check_fits(trimmed, self._context_tokens(backend), backend.model)
            response, sent = await self._ask_model(run, backend, trimmed, specs, request,
                                                   frontend, key, state)
            if sent is not trimmed:  # refused as too long: what was accepted is the budget now
                budget = min(budget, sent.estimated_tokens)
            trimmed = sent
            append_message(self.store, run,
                           Message.assistant(response.text or None, response.tool_calls),
                           text_calls_record(run, response, backend.name, frontend))
            run.streaming.clear()
            run.text_parts.append(response.text)

            if not response.tool_calls:
                if response.finish_reason == "length":
                    if continuations < MAX_LENGTH_CONTINUATIONS:
                        continuations += 1
                        append_message(self.store, run, Message.user(CONTINUE_PROMPT),
                                       {"internal": "continue"})
                        continue
                    frontend.on_event(StatusEvent(warning=True, message=(
                        f"the answer was cut at the model's output limit, {continuations + 1} "
                        "times in a row: it is incomplete. Ask for less at a time")))
                    return "max_tokens"
                if response.finish_reason in ("refusal", "content_filter"):
                    frontend.on_event(StatusEvent(warning=True, message=(
                        "the model refused to answer" if response.finish_reason == "refusal"
                        else "the model's server stopped the answer (its content filter)")))
                    return "refusal"
                if repeated_answer(run, response.text, ()):
                    return "no_progress"
                if run.check is None:  # engine/check.py waits for the first answer it may check
                    from agentls.engine.check import CheckState

                    run.check = CheckState(agent_config)
                if run.check.due(code_intel, workspace):  # its last edit: check the work
                    assert code_intel is not None
                    found = await run.check.run(code_intel, workspace, frontend)
                    if found.status == "problems" and run.check.turns_left > 0:
                        run.check.turns_left -= 1
                        append_message(self.store, run, Message.user(found.for_model()),
                                       {"internal": "check"})
                        continue
                return "done"

            if repeated_calls(run, response.tool_calls):
                return "no_progress"
            if repeated_answer(run, response.text, response.tool_calls):
                return "no_progress"
            cut_off = response.finish_reason == "length"
            await run_tools(self.store, run, response.tool_calls, tools.toolbox, frontend,
                            tools.automation, cut_off)
            run.break_before_text = True
        return "max_iterations"

    async def _ask_model(
        self,
        run: RunState,
        backend: Backend,
        trimmed: TrimResult,
        specs: list[ToolSpec],
        request: RunRequest,
        frontend: Frontend,
        key: tuple[str, str],
        state: SessionState,
    ) -> tuple[ChatResponse, TrimResult]:
        """The model's answer, and the trim it answered (a harder one after the server
        refused ``trimmed`` as too long)."""
        def on_retry(notice: RetryNotice) -> None:
            frontend.on_event(RetryEvent(attempt=notice.attempt, max_retries=notice.max_retries,
                                         delay=notice.delay, reason=notice.reason))

        shrunk = False
        # Agent turns (tools offered) are not replayed from the cache unless configured.
        use_cache = request.use_cache and (not specs or self.settings.cache.agent_runs)
        while True:
            run.streaming.clear()
            chat = ChatRequest(trimmed.messages, tools=specs, model=run.model or None)
            try:
                response: ChatResponse | None = None
                async for chunk in backend.stream(chat, on_retry=on_retry,
                                                  use_cache=use_cache):
                    if chunk.kind == "text" and chunk.text:
                        if run.break_before_text and any(run.text_parts):
                            run.text_parts.append("\n\n")
                            frontend.on_event(TextDelta(text="\n\n"))
                        run.break_before_text = False
                        run.streaming.append(chunk.text)
                        frontend.on_event(TextDelta(text=chunk.text, cached=chunk.cached))
                    elif chunk.kind == "reasoning" and chunk.text:
                        frontend.on_event(ReasoningDelta(text=chunk.text))
                    elif chunk.kind == "done":
                        response = chunk.response
                assert response is not None
            except BackendError as exc:
                if exc.kind != "context_too_long" or shrunk:
                    raise
                shrunk = True  # trim harder once, then give up with the server's message
                harder = trim_harder(state.system, run.history, [], trimmed, self.estimator,
                                     key, tools=specs)
                if harder.estimated_tokens >= trimmed.estimated_tokens:
                    raise  # only what must be sent is left: the same request would fail again
                trimmed = harder
                continue
            run.usage = run.usage + response.usage
            if response.cached:
                run.cached_turns += 1
            if not response.cached and response.usage.prompt_tokens:
                self.estimator.observe_request(key, chat.messages, specs,
                                               response.usage.prompt_tokens)
            return response, trimmed

    # --- session state --------------------------------------------------------------------

    def _session_state(self, session_id: str) -> SessionState:
        state = self._sessions.pop(session_id, None) or SessionState()
        self._sessions[session_id] = state  # the most recently used last
        while len(self._sessions) > MAX_SESSION_STATES:
            self._sessions.popitem(last=False)
        return state

    def _context_tokens(self, backend: Backend) -> int:
        config = self.settings.backends.get(backend.name)
        return config.context_max_tokens if config else 128_000
