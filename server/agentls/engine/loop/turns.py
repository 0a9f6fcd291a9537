"""Turn bookkeeping for the agent loop: the state of a run and of a session, what the store
holds of them, and a run's end (``finish_run``: its changes diffed and recorded, its result).

Every message is stored the moment it is complete; every assistant tool call gets its tool
result (a real one, or ``NOT_RUN`` when the run stopped first), so the next request is valid.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agentls.engine import review_notes
from agentls.engine.events import (
    DoneEvent,
    EditEvent,
    ErrorEvent,
    FileChangeInfo,
    Frontend,
    StatusEvent,
)
from agentls.engine.prompt import levels as context
from agentls.engine.sessions.store import SessionInfo, SessionStore, StoredMessage
from agentls.llm.backend import BackendError
from agentls.llm.messages import ChatResponse, Message, ToolCall, Usage
from agentls.tools.output import fail, to_json
from agentls.tools.permission_gate import SessionGrants
from agentls.tools.shell.sandboxed import ShellSandbox
from agentls.workspace.changeset import ChangeSet, ChangeSummary, FileDiff
from agentls.workspace.fence import Workspace

if TYPE_CHECKING:
    from agentls.engine.check import CheckState

# max_tokens: the answer was still cut at the model's output limit after the continuations;
# refusal: the model refused (OpenAI's refusal field) or its server filtered the answer.
StopReason = Literal["done", "max_iterations", "timeout", "cancelled", "no_progress", "error",
                     "max_tokens", "refusal"]

NO_PROGRESS_REPEATS = 3


@dataclass
class SessionState:
    """What a session keeps between runs in this process: prompt levels and approvals."""

    system: list[Message] = field(default_factory=list)
    facts: context.ProjectFacts | None = None
    instructions: context.Instructions | None = None
    grants: SessionGrants = field(default_factory=SessionGrants)
    sandbox: ShellSandbox | None = None  # its scratch layer lasts as long as the session


class RunState:
    """The mutable state of one run."""

    def __init__(self, run_id: str, session: SessionInfo, history: list[Message]) -> None:
        self.run_id = run_id
        self.session = session
        self.history = history
        self.text_parts: list[str] = []
        self.streaming: list[str] = []  # the answer being streamed, until it is stored whole
        self.break_before_text = False  # a new step's text starts a new paragraph
        self.usage = Usage()
        self.iterations = 0
        self.signatures: list[tuple[tuple[str, str], ...]] = []
        self.answers: list[tuple[str, tuple[tuple[str, str], ...]]] = []
        self.commands: list[tuple[str, int | None]] = []
        self.open_calls: list[ToolCall] = []  # calls stored without results yet
        self.cached_turns = 0
        self.model = ""  # the model this run asks (the session's chosen one, or the backend's)
        self.user_message_id: int | None = None  # the stored request, for the turn's outcome
        # Told once a run: calls read from the model's text; tools described in the prompt.
        self.told_calls_from_text = False
        self.told_tools_as_text = False
        self.check: CheckState | None = None  # the loop's check of its own work


def append_message(store: SessionStore, run: RunState, message: Message,
                   metadata: Mapping[str, Any] | None = None, *,
                   sent: Message | None = None) -> int:
    """Store a message the moment it is complete, and keep the request history in step
    (``sent``: the message as requests carry it, when that differs from what is stored).
    Assistant messages record the model that answered."""
    if message.role == "assistant" and run.model and metadata is None:
        metadata = {"model": run.model}
    message_id = store.append(run.session.id, message, metadata=metadata)
    run.history.append(sent or message)
    if message.role == "assistant" and message.tool_calls:
        run.open_calls = list(message.tool_calls)
    elif message.role == "tool":
        run.open_calls = [c for c in run.open_calls if c.id != message.tool_call_id]
    return message_id


def keep_streamed(store: SessionStore, run: RunState, stop: StopReason) -> None:
    """A run stopped mid-answer (cancelled, timed out): the text the person already saw is
    stored, marked with why it stops there, so the session shows it again (and the model
    knows what it had said)."""
    text = "".join(run.streaming)
    run.streaming.clear()
    if text:
        run.text_parts.append(text)
        append_message(store, run, Message.assistant(text), {"model": run.model, "stopped": stop})


def close_open_calls(store: SessionStore, run: RunState, stop: StopReason) -> None:
    """Providers refuse a tool call without its result: answer the ones left open."""
    for call in list(run.open_calls):
        reason = {"cancelled": "the person cancelled the run",
                  "timeout": "the run timed out"}.get(stop, "the run stopped")
        append_message(store, run, Message.tool(
            call.id, to_json(fail("NOT_RUN", f"Not run: {reason}.")), call.name))


def request_history(store: SessionStore,
                    session_id: str) -> tuple[list[Message], list[int | None]]:
    """The stored conversation as requests see it: the latest summary, then what follows;
    with each message's ``seq`` in the store (None for the summary and for results added
    here for calls the store left unanswered)."""
    stored = store.history(session_id)
    summary_at = max((i for i, m in enumerate(stored) if m.kind == "summary"), default=None)
    entries: list[tuple[Message, int | None]] = []
    start = 0
    if summary_at is not None:
        summary = stored[summary_at]
        entries.append((summary.message, None))
        through = int(summary.metadata.get("through_seq", summary.seq))
        start = next((i for i, m in enumerate(stored) if m.seq > through), len(stored))
    entries.extend((_as_sent(m), m.seq) for m in stored[start:] if m.kind == "message")
    answered = answer_orphans(entries)
    return [m for m, _ in answered], [seq for _, seq in answered]


def _as_sent(stored: StoredMessage) -> Message:
    """A user message with the notes it was sent with rendered in (engine/notes.py)."""
    if stored.message.role != "user":
        return stored.message
    return review_notes.for_model(stored.message, review_notes.of_message(stored.metadata))


def repeated_calls(run: RunState, calls: Sequence[ToolCall]) -> bool:
    run.signatures.append(tuple(sorted((c.name, c.arguments) for c in calls)))
    recent = run.signatures[-NO_PROGRESS_REPEATS:]
    return len(recent) == NO_PROGRESS_REPEATS and len(set(recent)) == 1


def repeated_answer(run: RunState, text: str, calls: Sequence[ToolCall]) -> bool:
    """The same output (text and calls together) three times: the same words before
    different calls are progress ("Let me read the next file.")."""
    if not text.strip():
        return False
    run.answers.append((text.strip(), tuple(sorted((c.name, c.arguments) for c in calls))))
    recent = run.answers[-NO_PROGRESS_REPEATS:]
    return len(recent) == NO_PROGRESS_REPEATS and len(set(recent)) == 1


def record_actions(store: SessionStore, run: RunState, diffs: Sequence[FileDiff],
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
    return store.append(run.session.id, Message.assistant(text), kind="actions",
                        metadata={"run_id": run.run_id, "applied": None})


def edit_event(diffs: Sequence[FileDiff], workspace: Workspace) -> EditEvent:
    files = tuple(
        FileChangeInfo(workspace.display_path(d.path), d.kind, d.insertions, d.deletions,
                       workspace.display_path(d.old_path) if d.old_path else None)
        for d in diffs
    )
    summary = ChangeSummary.of(diffs)
    return EditEvent(files=files, summary=str(summary))


_Entry = tuple[Message, int | None]  # a message of the request history, its seq in the store


def answer_orphans(entries: list[_Entry]) -> list[_Entry]:
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


def text_calls_record(run: RunState, response: ChatResponse, backend: str,
                       frontend: Frontend) -> dict[str, Any] | None:
    """The assistant message's record when its calls were read from its text (the server did
    not parse them, or tools are described in the prompt), told to the person once a run."""
    if not response.calls_from_text and not response.tools_as_text:
        return None
    from agentls.llm.text_tool_calls import FORM_NAMES

    record: dict[str, Any] = {"model": run.model}
    if response.tools_as_text:
        record["tools_as_text"] = True
        if not run.told_tools_as_text:
            run.told_tools_as_text = True
            frontend.on_event(StatusEvent(warning=True, message=(
                f"{backend}: the model's server takes no tools, so the tools are described in "
                "the prompt and the calls read from the model's text (tool_calls = \"text\")")))
    if response.calls_from_text and not response.tools_as_text:
        form = FORM_NAMES.get(response.calls_from_text, response.calls_from_text)
        note = (f"the server did not parse the model's tool calls: AgentLS read "
                f"{len(response.tool_calls)} from its text, written as {form}")
        record["calls_from_text"] = response.calls_from_text
        record["note"] = note
        if not run.told_calls_from_text:
            run.told_calls_from_text = True
            frontend.on_event(StatusEvent(warning=True, message=(
                f"{backend}: {note}. Start the server with its tool parser (llama.cpp: --jinja; "
                "vLLM: --enable-auto-tool-choice --tool-call-parser NAME), or set "
                f"backends.{backend}.tool_calls = \"text\"")))
    elif response.calls_from_text:
        record["calls_from_text"] = response.calls_from_text
    return record


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
    check: dict[str, Any] | None = None  # the last check of its changes (engine/check.py)


async def finish_run(store: SessionStore, run: RunState, stop: StopReason, workspace: Workspace,
                     frontend: Frontend, error: BackendError | None = None,
                     error_message: str = "", hint: str = "") -> RunResult:
    """The end of every run, however it stopped: the error told, the changes diffed (off the
    event loop) and recorded, the edit and done events, the result."""
    if stop in ("error", "timeout"):
        frontend.on_event(ErrorEvent(
            message=error_message, error_kind=error.kind if error else stop,
            hint=error.hint if error else hint))
    changeset = workspace.changeset
    check = run.check.last.to_dict() if run.check and run.check.last else None
    diffs: list[FileDiff] = []
    if stop != "cancelled":
        try:  # diffing big files takes a while: not on the event loop
            diffs = await asyncio.to_thread(changeset.diff)
        except asyncio.CancelledError:  # cancelled again while finishing: nothing is sent
            stop = "cancelled"
    send = stop != "cancelled"
    actions_id = record_actions(store, run, diffs, workspace)
    if diffs:
        frontend.on_event(edit_event(diffs, workspace))
    text = "".join(run.text_parts)
    frontend.on_event(DoneEvent(stop_reason=stop, text=text, cached_turns=run.cached_turns))
    return RunResult(
        run.run_id, run.session.id, stop, text, changeset, run.usage, run.iterations, send,
        error, error_message, run.commands, actions_id, diffs, run.cached_turns, check,
    )
