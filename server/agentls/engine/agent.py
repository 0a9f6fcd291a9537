"""The agent loop both front-ends share: prompt, stream, run tools, feed results back, repeat.

A run ends when the model answers without tool calls (``done``), or at ``max_iterations``,
the run's ``timeout``, a cancellation, ``no_progress`` (the same call or the same answer
three times in a row), or an ``error``. Whatever happens, the session stays consistent:
every assistant tool call in the store gets its tool result, so the next request is valid.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agentls.config import Settings
from agentls.engine import context
from agentls.engine.context_cache import ProjectContextCache
from agentls.engine.events import (
    DoneEvent,
    EditEvent,
    ErrorEvent,
    FileChangeInfo,
    Frontend,
    RetryEvent,
    StatusEvent,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
)
from agentls.engine.history import (
    SUMMARY_MAX_TOKENS,
    TRANSCRIPT_CHARS,
    TrimResult,
    apply_summary,
    check_fits,
    compaction_request,
    compaction_split,
    needs_compaction,
    prompt_budget,
    summary_message,
    trim_for_budget,
    trim_harder,
)
from agentls.engine.queue import SessionQueue
from agentls.engine.search_index import IndexHub
from agentls.engine.sessions import SessionInfo, SessionStore
from agentls.engine.tokens import TokenEstimator
from agentls.llm.backend import Backend, BackendError, RetryNotice
from agentls.llm.messages import (
    ChatRequest,
    ChatResponse,
    Message,
    ToolCall,
    ToolSpec,
    Usage,
)
from agentls.tools.changeset import ChangeSet, ChangeSummary, FileDiff
from agentls.tools.output import fail, ok, to_json
from agentls.tools.permissions import (
    ApprovalAnswer,
    ApprovalRequest,
    PermissionPolicy,
    SessionGrants,
)
from agentls.tools.registry import ToolBox, ToolContext, ToolOutcome
from agentls.tools.sandboxed_shell import ShellSandbox
from agentls.tools.workspace import Workspace

log = logging.getLogger(__name__)

StopReason = Literal["done", "max_iterations", "timeout", "cancelled", "no_progress", "error"]

MAX_LENGTH_CONTINUATIONS = 2
# Sessions whose prompt levels and approvals stay in memory; a long-lived server creates a
# session per chat and per code action, so the oldest are forgotten (and rebuilt if used).
MAX_SESSION_STATES = 64
NO_PROGRESS_REPEATS = 3
TOOL_SCHEMA_ALLOWANCE = 2_000  # tokens the tool schemas take in a request (about 6 KB)
ASK_USER = "ask_user"
ASK_USER_SPEC = ToolSpec(
    ASK_USER,
    "Ask the person a multiple-choice question when you cannot decide yourself (which of two "
    "designs, whether to delete something). Returns their choice.",
    {
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "The question, one sentence."},
            "options": {"type": "array", "items": {"type": "string"}, "minItems": 2,
                        "description": "The choices, short."},
        },
        "required": ["question", "options"],
        "additionalProperties": False,
    },
)
CONTINUE_PROMPT = (
    "Your previous answer was cut off at the output limit. Continue exactly where it stopped, "
    "more concisely; do not repeat what you already wrote."
)
CUT_OFF_CALL = (
    "This tool call was cut off at the output limit, so its arguments are incomplete and it "
    "was not run. Send it again, smaller: split big edits into several calls."
)


@dataclass
class RunRequest:
    prompt: str
    attachments: context.Attachments | None = None
    notes: Sequence[str] = ()  # things the model must hear first (a rejected edit, say)
    max_iterations: int | None = None
    timeout_s: float | None = None
    tools: Iterable[str] | None = None  # restrict the toolbox (code actions)
    use_cache: bool = True


@dataclass
class RunResult:
    run_id: str
    session_id: str
    stop_reason: StopReason
    text: str
    changeset: ChangeSet
    usage: Usage
    iterations: int
    send_changes: bool  # False after a cancellation: pending changes are dropped
    error: BackendError | None = None
    error_message: str = ""
    commands: list[tuple[str, int | None]] = field(default_factory=list)
    actions_message_id: int | None = None
    diffs: list[FileDiff] = field(default_factory=list)  # of the changes to send, if any
    cached_turns: int = 0  # model answers replayed from the response cache


@dataclass
class _SessionState:
    """What a session keeps between runs in this process: prompt levels and approvals."""

    system: list[Message] = field(default_factory=list)
    facts: context.ProjectFacts | None = None
    instructions: context.Instructions | None = None
    grants: SessionGrants = field(default_factory=SessionGrants)
    sandbox: ShellSandbox | None = None  # its scratch layer lasts as long as the session


class _Run:
    """The mutable state of one run."""

    def __init__(self, run_id: str, session: SessionInfo, history: list[Message]) -> None:
        self.run_id = run_id
        self.session = session
        self.history = history
        self.text_parts: list[str] = []
        self.break_before_text = False  # a new step's text starts a new paragraph
        self.usage = Usage()
        self.iterations = 0
        self.signatures: list[tuple[tuple[str, str], ...]] = []
        self.answers: list[tuple[str, tuple[tuple[str, str], ...]]] = []
        self.commands: list[tuple[str, int | None]] = []
        self.open_calls: list[ToolCall] = []  # calls stored without results yet
        self.cached_turns = 0


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
        self._sessions: OrderedDict[str, _SessionState] = OrderedDict()
        self._tasks: dict[str, asyncio.Task[RunResult]] = {}
        # Shared with whoever gathers them ahead of the first run (an editor, at start-up).
        self.project_contexts = project_contexts or ProjectContextCache()

    # --- public API -----------------------------------------------------------------------

    def new_run_id(self) -> str:
        return uuid.uuid4().hex[:12]

    async def run(
        self,
        session_id: str,
        request: RunRequest,
        frontend: Frontend,
        workspace: Workspace,
        *,
        run_id: str | None = None,
    ) -> RunResult:
        """Run one request on a session; waits its turn if the session is busy."""
        run_id = run_id or self.new_run_id()
        async with self.queue.turn(session_id):
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
        run = _Run(run_id, session, [])
        stop: StopReason = "done"
        error: BackendError | None = None
        error_message = ""
        hint = ""
        timeout = request.timeout_s or self.settings.timeout_ms / 1000
        try:
            async with asyncio.timeout(timeout):
                # A long session is megabytes of stored JSON: read it off the event loop.
                run.history, seqs = await asyncio.to_thread(self._request_history, session_id)
                backend: Backend = self.backends.get(session.backend)
                if not state.system:  # levels 1-3: once per session, then never changed
                    state.facts, state.instructions = await self.project_context(workspace)
                    state.system = context.system_messages(state.facts, state.instructions)
                    summary = state.instructions.summary()
                    log.info("session %s: %s", session_id, summary)
                    frontend.on_event(StatusEvent(message=summary, topic="instructions"))
                run.history = await self._maybe_compact(session, backend, run.history, seqs,
                                                        state.system)
                prompt = request.prompt
                if request.notes:
                    notes = "\n".join(f"[AgentLS note: {note}]" for note in request.notes)
                    prompt = f"{notes}\n\n{prompt}"
                # Attached files are read and measured: off the event loop too.
                turn = await asyncio.to_thread(
                    context.render_turn, prompt, request.attachments, workspace, state.facts,
                    self.estimator.count_text, instructions=state.instructions,
                    room_tokens=self._attachment_room(backend, state.system, prompt),
                )
                for note in turn.notes:
                    frontend.on_event(StatusEvent(message=note))
                self._append(run, turn.message)
                stop = await self._loop(run, request, frontend, workspace, backend, state)
        except TimeoutError:
            stop = "timeout"
            error_message = f"the run took longer than {timeout:g} s"
            hint = "raise timeout_ms or split the task"
        except asyncio.CancelledError:
            stop = "cancelled"
        except BackendError as exc:
            stop, error, error_message = "error", exc, str(exc)
            if exc.partial is not None and exc.partial.text:
                self._append(run, Message.assistant(exc.partial.text))
        except Exception as exc:  # a bug must end the run with a result, not leave it hanging
            log.exception("run %s failed", run_id)
            stop, error_message = "error", f"AgentLS failed unexpectedly: {exc}"
            hint = "see the AgentLS log; the session is kept, so you can ask again"
        finally:
            self._close_open_calls(run, stop)

        if stop in ("error", "timeout"):
            frontend.on_event(ErrorEvent(
                message=error_message, error_kind=error.kind if error else stop,
                hint=error.hint if error else hint))
        changeset = workspace.changeset
        diffs: list[FileDiff] = []
        if stop != "cancelled":
            try:  # diffing big files takes a while: not on the event loop
                diffs = await asyncio.to_thread(changeset.diff)
            except asyncio.CancelledError:  # cancelled again while finishing: nothing is sent
                stop = "cancelled"
        send = stop != "cancelled"
        actions_id = self._record_actions(run, diffs, workspace)
        if diffs:
            frontend.on_event(_edit_event(diffs, workspace))
        text = "".join(run.text_parts)
        frontend.on_event(DoneEvent(stop_reason=stop, text=text, cached_turns=run.cached_turns))
        return RunResult(
            run_id, session_id, stop, text, changeset, run.usage, run.iterations, send,
            error, error_message, run.commands, actions_id, diffs, run.cached_turns,
        )

    async def _loop(
        self,
        run: _Run,
        request: RunRequest,
        frontend: Frontend,
        workspace: Workspace,
        backend: Backend,
        state: _SessionState,
    ) -> StopReason:
        automation = run.session.mode == "automation" or not frontend.interactive
        # A front-end the person approved in advance (`--yes`) answers without asking anyone,
        # so automation runs honour it too; questions (ask_user) still go unanswered.
        approves = not automation or bool(getattr(frontend, "preapproved", False))
        if state.sandbox is None or state.sandbox.settings != self.settings.sandbox:
            state.sandbox = ShellSandbox(self.settings.sandbox, run.session.id)
        state.sandbox.notify = lambda text: frontend.on_event(
            StatusEvent(message=text, warning=True))
        toolbox = ToolBox(
            ToolContext(
                workspace,
                policy=self._policy or self.settings.permissions,
                grants=state.grants,
                confirm=_confirm(frontend) if approves else None,
                api_key_env=self.settings.active_backend.api_key_env or "OPENAI_API_KEY",
                tool_timeout_s=self.settings.tool_timeout_s,
                sandbox=state.sandbox,
                search_index=lambda: self.search_hub.get(workspace),
            ),
            only=request.tools,
        )
        specs = [ToolSpec(s.name, s.description, s.parameters) for s in toolbox.schemas()]
        specs.append(ASK_USER_SPEC)
        max_iterations = request.max_iterations or self.settings.max_iterations
        continuations = 0
        key = (backend.name, backend.model)
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
            self._append(run, Message.assistant(response.text or None, response.tool_calls))
            run.text_parts.append(response.text)

            if not response.tool_calls:
                if response.finish_reason == "length" and continuations < MAX_LENGTH_CONTINUATIONS:
                    continuations += 1
                    self._append(run, Message.user(CONTINUE_PROMPT))
                    continue
                if self._repeated_answer(run, response.text, ()):
                    return "no_progress"
                return "done"

            if self._repeated_calls(run, response.tool_calls):
                return "no_progress"
            if self._repeated_answer(run, response.text, response.tool_calls):
                return "no_progress"
            cut_off = response.finish_reason == "length"
            await self._run_tools(run, response.tool_calls, toolbox, frontend, automation,
                                  cut_off)
            run.break_before_text = True
        return "max_iterations"

    async def _ask_model(
        self,
        run: _Run,
        backend: Backend,
        trimmed: TrimResult,
        specs: list[ToolSpec],
        request: RunRequest,
        frontend: Frontend,
        key: tuple[str, str],
        state: _SessionState,
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
            chat = ChatRequest(trimmed.messages, tools=specs)
            try:
                response: ChatResponse | None = None
                async for chunk in backend.stream(chat, on_retry=on_retry,
                                                  use_cache=use_cache):
                    if chunk.kind == "text" and chunk.text:
                        if run.break_before_text and any(run.text_parts):
                            run.text_parts.append("\n\n")
                            frontend.on_event(TextDelta(text="\n\n"))
                        run.break_before_text = False
                        frontend.on_event(TextDelta(text=chunk.text, cached=chunk.cached))
                    elif chunk.kind == "done":
                        response = chunk.response
                assert response is not None
            except BackendError as exc:
                if exc.kind != "context_too_long" or shrunk:
                    raise
                shrunk = True  # trim harder once, then give up with the server's message
                harder = trim_harder(state.system, run.history, [], trimmed, self.estimator,
                                     key, tools=specs)
                if (harder.dropped_count, harder.cut_tool_results) == (
                        trimmed.dropped_count, trimmed.cut_tool_results):
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

    async def _run_tools(
        self,
        run: _Run,
        calls: Sequence[ToolCall],
        toolbox: ToolBox,
        frontend: Frontend,
        automation: bool,
        cut_off: bool,
    ) -> None:
        """Read-only calls next to each other run together; changing ones run in order."""
        results: dict[str, str] = {}
        batch: list[ToolCall] = []

        async def run_call(call: ToolCall) -> None:
            results[call.id] = await self._call(call, toolbox, frontend, automation, run)

        async def flush() -> None:
            await asyncio.gather(*(run_call(c) for c in batch))
            batch.clear()

        try:
            for call in calls:
                frontend.on_event(ToolCallStarted(call_id=call.id, name=call.name,
                                                  arguments=call.arguments))
                if cut_off and _truncated(call):
                    results[call.id] = to_json(fail("CUT_OFF", CUT_OFF_CALL))
                    frontend.on_event(ToolResultEvent(call_id=call.id, name=call.name, ok=False,
                                                      summary="cut off at the output limit"))
                elif toolbox.is_read_only(call.name) or call.name not in toolbox.names():
                    batch.append(call)
                else:
                    await flush()
                    await run_call(call)
            await flush()
        finally:
            # Stopped midway (timeout, cancel), the calls that did run keep their results: the
            # ChangeSet holds their edits. _close_open_calls answers the others.
            for call in calls:
                if call.id in results:
                    self._append(run, Message.tool(call.id, results[call.id], call.name))

    async def _call(self, call: ToolCall, toolbox: ToolBox, frontend: Frontend,
                    automation: bool, run: _Run) -> str:
        if call.name == ASK_USER:
            result = await self._ask_user(call, frontend, automation)
            text = to_json(result)
            frontend.on_event(ToolResultEvent(call_id=call.id, name=call.name,
                                              ok=bool(result["ok"]), summary=_summary(result)))
            return text
        outcome: ToolOutcome = await toolbox.call(call.name, call.arguments)
        if call.name == "shell_exec" and outcome.arguments and outcome.result.get("ok") is not None:
            exit_code = outcome.result.get("exit_code")
            if outcome.result.get("error") != "USER_REJECTED":
                run.commands.append((str(outcome.arguments.get("command", "")),
                                     exit_code if isinstance(exit_code, int) else None))
        frontend.on_event(ToolResultEvent(call_id=call.id, name=call.name, ok=outcome.ok,
                                          summary=_summary(outcome.result)))
        return outcome.text

    async def _ask_user(self, call: ToolCall, frontend: Frontend,
                        automation: bool) -> dict[str, Any]:
        args = _arguments(call)
        question = args.get("question") if isinstance(args, dict) else None
        options = args.get("options") if isinstance(args, dict) else None
        if not isinstance(question, str) or not isinstance(options, list) or len(options) < 2:
            return fail("INVALID_ARGUMENTS", "ask_user needs a 'question' string and at least "
                        "two 'options'.", schema=ASK_USER_SPEC.parameters)
        # A front-end may say it cannot show questions (an editor without message requests).
        if not automation and not getattr(frontend, "can_ask", True):
            frontend.on_event(StatusEvent(message=f"The agent asked “{question}”, but this "
                                          "editor cannot show questions: it decides on its own."))
            automation = True
        if automation:
            return fail("NO_ONE_TO_ASK", "Nobody can answer questions in this run "
                        "(non-interactive). Decide yourself, say which option you chose and "
                        "why, and carry on.")
        answer = await frontend.ask(question, [str(o) for o in options])
        if answer is None:
            return fail("NO_ANSWER", "The person dismissed the question. Decide yourself or "
                        "stop and explain what you need.")
        return ok(answer=answer)

    # --- bookkeeping ----------------------------------------------------------------------

    def _append(self, run: _Run, message: Message) -> None:
        """Store a message the moment it is complete, and keep the request history in step."""
        self.store.append(run.session.id, message)
        run.history.append(message)
        if message.role == "assistant" and message.tool_calls:
            run.open_calls = list(message.tool_calls)
        elif message.role == "tool":
            run.open_calls = [c for c in run.open_calls if c.id != message.tool_call_id]

    def _close_open_calls(self, run: _Run, stop: StopReason) -> None:
        """Providers refuse a tool call without its result: answer the ones left open."""
        for call in list(run.open_calls):
            reason = {"cancelled": "the person cancelled the run",
                      "timeout": "the run timed out"}.get(stop, "the run stopped")
            self._append(run, Message.tool(
                call.id, to_json(fail("NOT_RUN", f"Not run: {reason}.")), call.name))

    def _session_state(self, session_id: str) -> _SessionState:
        state = self._sessions.pop(session_id, None) or _SessionState()
        self._sessions[session_id] = state  # the most recently used last
        while len(self._sessions) > MAX_SESSION_STATES:
            self._sessions.popitem(last=False)
        return state

    def _request_history(self, session_id: str) -> tuple[list[Message], list[int | None]]:
        """The stored conversation as requests see it: the latest summary, then what follows;
        with each message's ``seq`` in the store (None for the summary and for results added
        here for calls the store left unanswered)."""
        stored = self.store.history(session_id)
        summary_at = max((i for i, m in enumerate(stored) if m.kind == "summary"), default=None)
        entries: list[tuple[Message, int | None]] = []
        start = 0
        if summary_at is not None:
            summary = stored[summary_at]
            entries.append((summary.message, None))
            through = int(summary.metadata.get("through_seq", summary.seq))
            start = next((i for i, m in enumerate(stored) if m.seq > through), len(stored))
        entries.extend((m.message, m.seq) for m in stored[start:] if m.kind == "message")
        answered = _answer_orphans(entries)
        return [m for m, _ in answered], [seq for _, seq in answered]

    async def _maybe_compact(self, session: SessionInfo, backend: Backend,
                             history: list[Message], seqs: list[int | None],
                             system: list[Message]) -> list[Message]:
        """Summarise the older part of a history that is long (``compaction.max_messages``) or
        that trimming can no longer fit comfortably (90% of the budget); the summary's
        ``through_seq`` marks the last stored message it stands for."""
        limit = self.settings.compaction.max_messages
        budget = prompt_budget(self._context_tokens(backend))
        key = (backend.name, backend.model)
        trimmed = await asyncio.to_thread(trim_for_budget, system, history, [], budget,
                                          self.estimator, key)
        if not needs_compaction(history, max_messages=limit, trimmed=trimmed,
                                budget_tokens=budget):
            return history
        split = compaction_split(history)
        if split <= 0:
            return history
        window = self._context_tokens(backend)
        # The transcript must fit the model too: about three characters per token of half the
        # window, and the summary at most a quarter of it.
        ask = compaction_request(history[:split],
                                 max_transcript_chars=min(TRANSCRIPT_CHARS, window * 3 // 2),
                                 max_summary_tokens=min(SUMMARY_MAX_TOKENS, window // 4))
        try:
            response = await backend.complete(ask)
        except BackendError as exc:  # trimming still keeps the request within the budget
            log.warning("compacting session %s failed, trimming instead: %s", session.id, exc)
            return history
        if not response.text.strip():
            return history
        compacted = apply_summary(history, response.text, split)
        kept = seqs[len(history) - (len(compacted) - 1):]
        first_kept = next((seq for seq in kept if seq is not None), None)
        through = (first_kept - 1 if first_kept is not None
                   else max((seq for seq in seqs if seq is not None), default=0))
        self.store.append(session.id, summary_message(response.text), kind="summary",
                          metadata={"through_seq": through})
        return compacted

    def _attachment_room(self, backend: Backend, system: Sequence[Message], prompt: str) -> int:
        """Tokens the turn's attachments may take: half of what the prompt budget leaves after
        the earlier levels, the request and the tool schemas (the rest is for the history and
        the tool results of the turn)."""
        used = sum(self.estimator.count_text(m.content or "") for m in system)
        used += self.estimator.count_text(prompt) + TOOL_SCHEMA_ALLOWANCE
        return max(0, prompt_budget(self._context_tokens(backend)) - used) // 2

    def _context_tokens(self, backend: Backend) -> int:
        config = self.settings.backends.get(backend.name)
        return config.context_max_tokens if config else 128_000

    def _repeated_calls(self, run: _Run, calls: Sequence[ToolCall]) -> bool:
        run.signatures.append(tuple(sorted((c.name, c.arguments) for c in calls)))
        recent = run.signatures[-NO_PROGRESS_REPEATS:]
        return len(recent) == NO_PROGRESS_REPEATS and len(set(recent)) == 1

    def _repeated_answer(self, run: _Run, text: str, calls: Sequence[ToolCall]) -> bool:
        """The same output (text and calls together) three times: the same words before
        different calls are progress ("Let me read the next file.")."""
        if not text.strip():
            return False
        run.answers.append((text.strip(), tuple(sorted((c.name, c.arguments) for c in calls))))
        recent = run.answers[-NO_PROGRESS_REPEATS:]
        return len(recent) == NO_PROGRESS_REPEATS and len(set(recent)) == 1

    def _record_actions(self, run: _Run, diffs: Sequence[FileDiff],
                        workspace: Workspace) -> int | None:
        parts = []
        for diff in diffs:
            name = workspace.display_path(diff.path)
            if diff.kind == "create":
                parts.append(f"created {name}")
            elif diff.kind == "delete":
                parts.append(f"deleted {name}")
            elif diff.kind == "rename":
                old = workspace.display_path(diff.old_path or diff.path)
                parts.append(f"renamed {old} to {name}")
            else:
                parts.append(f"edited {name} (+{diff.insertions} −{diff.deletions})")
        for command, code in run.commands:
            status = f"exit {code}" if code is not None else "did not finish"
            parts.append(f"ran {command} ({status})")
        if not parts:
            return None
        text = ", ".join(parts)
        return self.store.append(run.session.id, Message.assistant(text), kind="actions",
                                 metadata={"run_id": run.run_id, "applied": None})


def _edit_event(diffs: Sequence[FileDiff], workspace: Workspace) -> EditEvent:
    files = tuple(
        FileChangeInfo(workspace.display_path(d.path), d.kind, d.insertions, d.deletions,
                       workspace.display_path(d.old_path) if d.old_path else None)
        for d in diffs
    )
    summary = ChangeSummary(
        files=len(diffs),
        created=sum(d.kind == "create" for d in diffs),
        updated=sum(d.kind == "update" for d in diffs),
        deleted=sum(d.kind == "delete" for d in diffs),
        renamed=sum(d.kind == "rename" for d in diffs),
        insertions=sum(d.insertions for d in diffs),
        deletions=sum(d.deletions for d in diffs),
    )
    return EditEvent(files=files, summary=str(summary))


_Entry = tuple[Message, int | None]  # a message of the request history, its seq in the store


def _answer_orphans(entries: list[_Entry]) -> list[_Entry]:
    """A process killed mid-tool leaves calls without results; providers refuse those, so the
    request history answers them as interrupted, and leaves out results that answer no call
    before them (two processes writing one session). The store keeps what really happened."""
    out: list[_Entry] = []
    pending: list[ToolCall] = []
    for message, seq in entries:
        if message.role == "tool":
            if not any(c.id == message.tool_call_id for c in pending):
                continue
            pending = [c for c in pending if c.id != message.tool_call_id]
        else:
            out.extend(_interrupted(pending))
            pending = list(message.tool_calls) if message.role == "assistant" else []
        out.append((message, seq))
    out.extend(_interrupted(pending))
    return out


def _interrupted(calls: Sequence[ToolCall]) -> list[_Entry]:
    return [
        (Message.tool(c.id, to_json(fail("NOT_RUN", "Not run: the run was interrupted.")),
                      c.name), None)
        for c in calls
    ]


def _confirm(frontend: Frontend) -> Any:
    async def confirm(request: ApprovalRequest) -> ApprovalAnswer:
        return await frontend.confirm(request)

    return confirm


def _arguments(call: ToolCall) -> dict[str, Any] | None:
    try:
        return call.parsed_arguments()
    except ValueError:
        return None


def _truncated(call: ToolCall) -> bool:
    return _arguments(call) is None


def _summary(result: dict[str, Any]) -> str:
    if result.get("ok"):
        for key in ("path", "action", "count", "exit_code", "answer"):
            if key in result:
                return f"ok ({key}: {result[key]})"
        return "ok"
    return f"{result.get('error', 'failed')}: {str(result.get('message', ''))[:200]}"

