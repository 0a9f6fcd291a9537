"""What the engine tells a front-end while a run goes on, and what it may ask of it.

Front-ends (the LSP server, the terminal) implement ``Frontend``; the engine never imports
them. Events are plain frozen dataclasses with a ``kind`` so they serialise to the
``agentls/chatEvent`` payloads of DESIGN.md's LSP contract and to the CLI's transcript.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from agentls.tools.permission_gate import ApprovalAnswer, ApprovalRequest

# The id of the tool call the current task runs (set by engine/loop/tool_dispatch.py), so what a
# front-end lends a tool (the editor's terminal) can show up in that call.
TOOL_CALL_ID: ContextVar[str | None] = ContextVar("agentls_tool_call_id", default=None)

EventKind = Literal["turn", "text", "reasoning", "toolCall", "toolResult", "status", "retry",
                    "edit", "done", "error", "plan"]


@dataclass(frozen=True, kw_only=True)
class Event:
    kind: EventKind

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class TurnStarted(Event):
    """The request is stored: what the person asked, the chips of what was attached, what
    was refused and why, and the model and mode this turn runs with. The history
    (``engine/display_history.py``) shows the same fields for this turn."""

    prompt: str = ""
    attachments: tuple[dict[str, Any], ...] = ()
    refused: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = ()  # what AgentLS told the model first (a rejected edit ...)
    trimmed: tuple[str, ...] = ()  # attachments cut or left out to fit, and why
    model: str = ""
    backend: str = ""
    mode: str = ""
    kind: EventKind = "turn"


@dataclass(frozen=True, kw_only=True)
class TextDelta(Event):
    text: str = ""
    cached: bool = False
    kind: EventKind = "text"


@dataclass(frozen=True, kw_only=True)
class ReasoningDelta(Event):
    """The model's thinking, where its server streams it; shown, never part of the answer."""

    text: str = ""
    kind: EventKind = "reasoning"


@dataclass(frozen=True, kw_only=True)
class ToolCallStarted(Event):
    call_id: str = ""
    name: str = ""
    arguments: str = ""
    kind: EventKind = "toolCall"


@dataclass(frozen=True, kw_only=True)
class ToolResultEvent(Event):
    call_id: str = ""
    name: str = ""
    ok: bool = True
    summary: str = ""
    output: str = ""  # what a command printed, for front-ends that show it (ACP tool content)
    kind: EventKind = "toolResult"


@dataclass(frozen=True, kw_only=True)
class PlanEvent(Event):
    """The model's whole task list (``update_plan``, engine/loop/plan.py), replacing the last one;
    only for a front-end that says ``shows_plan``."""

    steps: tuple[tuple[str, str], ...] = ()  # (step, pending | in_progress | completed)
    kind: EventKind = "plan"


@dataclass(frozen=True, kw_only=True)
class StatusEvent(Event):
    message: str = ""
    iteration: int = 0
    topic: str = ""  # "instructions": which instruction files were loaded (shown with -v)
    warning: bool = False  # worth the person's attention: shown, not just a passing status
    kind: EventKind = "status"


@dataclass(frozen=True, kw_only=True)
class RetryEvent(Event):
    attempt: int = 0
    max_retries: int = 0
    delay: float = 0.0
    reason: str = ""
    kind: EventKind = "retry"

    @property
    def text(self) -> str:
        return (f"retry {self.attempt}/{self.max_retries} in {self.delay:.1f} s: "
                f"{self.reason.replace('_', ' ')}")


@dataclass(frozen=True)
class FileChangeInfo:
    path: str
    kind: str  # create | update | delete | rename
    insertions: int
    deletions: int
    old_path: str | None = None


@dataclass(frozen=True, kw_only=True)
class EditEvent(Event):
    files: tuple[FileChangeInfo, ...] = ()
    summary: str = ""
    kind: EventKind = "edit"


@dataclass(frozen=True, kw_only=True)
class DoneEvent(Event):
    stop_reason: str = "done"
    text: str = ""
    cached_turns: int = 0  # model answers replayed from the response cache, not asked
    kind: EventKind = "done"


@dataclass(frozen=True, kw_only=True)
class ErrorEvent(Event):
    message: str = ""
    error_kind: str = ""
    hint: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    kind: EventKind = "error"


class Frontend(Protocol):
    """Where events go and who answers questions. ``interactive`` false means nobody can be
    asked: approvals become denials and ``ask_user`` tells the model to decide itself.

    A front-end may also set ``preapproved = True`` (read with ``getattr``, default False):
    the person approved every ``ask`` in advance (``agentls run --yes``) and ``confirm``
    answers without asking anyone, so it is used even in ``automation`` sessions, which
    otherwise deny. Questions still go unanswered there. ``can_ask = False`` (also optional)
    says the front-end cannot show questions at all, so ``ask_user`` tells the model to
    decide itself instead of reporting a dismissed question. ``command_runner`` (optional,
    a ``tools.shell.CommandRunner``) runs sandboxed commands' argv elsewhere (the ACP
    client's terminal) instead of in the engine's own process. ``shows_plan = True``
    (optional) offers the model ``update_plan`` and sends the front-end ``PlanEvent``s."""

    interactive: bool

    def on_event(self, event: Event) -> None: ...

    async def confirm(self, request: ApprovalRequest) -> ApprovalAnswer: ...

    async def ask(self, question: str, options: list[str]) -> str | None: ...


class RecordingFrontend:
    """A non-interactive front-end that keeps every event (tests, headless runs, benches)."""

    def __init__(self, *, interactive: bool = False) -> None:
        self.interactive = interactive
        self.events: list[Event] = []

    def on_event(self, event: Event) -> None:
        self.events.append(event)

    async def confirm(self, request: ApprovalRequest) -> ApprovalAnswer:
        return "deny"

    async def ask(self, question: str, options: list[str]) -> str | None:
        return None

    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, TextDelta))

    def of(self, kind: EventKind) -> list[Event]:
        return [e for e in self.events if e.kind == kind]
