"""The engine's Frontend over LSP: events become ``agentls/chatEvent`` notifications.

Every event of a run carries ``{sessionId, runId, seq, kind}`` with ``seq`` counting from 1.
The engine's ``done`` event is held back and sent last by ``finish``, once the edit has
been delivered (or not), so a client can treat ``done`` as the end of the run. Status and
tool activity also go to the run's ``$/progress``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from agentls.engine.events import (
    DoneEvent,
    Event,
    ReasoningDelta,
    RetryEvent,
    StatusEvent,
    TextDelta,
    ToolResultEvent,
)
from agentls.engine.loop.tool_dispatch import ProposedClaims, as_proposed
from agentls.lsp.services import approvals
from agentls.lsp.services.protocol import CHAT_EVENT, chat_event

if TYPE_CHECKING:
    from agentls.lsp.services.server_context import ServerContext
    from agentls.lsp.services.work_done import RunProgress
    from agentls.tools.permission_gate import ApprovalAnswer, ApprovalRequest


class LspFrontend:
    def __init__(self, ls: ServerContext, session_id: str, run_id: str, *,
                 progress: RunProgress | None = None, interactive: bool = True) -> None:
        self.interactive = interactive
        self.session_id = session_id
        self.run_id = run_id
        self.progress = progress
        self.done: DoneEvent | None = None  # the engine's, held back for finish()
        self.finished = False
        self._ls = ls
        self._seq = 0
        self._claims = ProposedClaims()  # the model's text after a proposed change

    def emit(self, kind: str, **fields: Any) -> None:
        self._seq += 1
        self._ls.protocol.notify(CHAT_EVENT,
                                 chat_event(self.session_id, self.run_id, self._seq, kind, fields))

    # --- the engine's Frontend protocol -----------------------------------------------------

    def on_event(self, event: Event) -> None:
        if isinstance(event, DoneEvent):
            self.done = event
            return
        if isinstance(event, ReasoningDelta):  # not in the chatEvent contract (ACP shows it)
            return
        if isinstance(event, StatusEvent) and event.warning:
            self._ls.window_show_message(lsp.ShowMessageParams(
                type=lsp.MessageType.Warning, message=f"AgentLS: {event.message}"))
        fields = event.to_dict()
        fields.pop("kind", None)
        fields.pop("output", None)  # the chatEvent contract carries the summary only
        if isinstance(event, RetryEvent):
            fields["text"] = event.text
        if isinstance(event, ToolResultEvent):  # a change lands once reviewed (DESIGN.md 13)
            fields["summary"] = as_proposed(event.name, event.ok, event.summary)
            self._claims.tool_result(event.name, event.ok, event.summary)
        if isinstance(event, TextDelta):  # and so does what the model says it did
            fields["text"] = self._claims.text(event.text)
        self.emit(event.kind, **fields)
        status = _status_of(event, fields)
        if status and self.progress is not None:
            self.progress.report(status)

    async def confirm(self, request: ApprovalRequest) -> ApprovalAnswer:
        if self.progress is not None:
            # The status line shows plain text: `code` spans become quotes, as in the prompt.
            self.progress.report(f"waiting for approval: {approvals.plain_text(request.title)}")
        return await approvals.confirm(self._ls, request, self.status)

    @property
    def can_ask(self) -> bool:
        """Whether the editor can show a question at all (window/showMessageRequest)."""
        return approvals.can_ask(self._ls)

    async def ask(self, question: str, options: list[str]) -> str | None:
        if self.progress is not None:
            self.progress.report("waiting for your answer")
        return await approvals.ask(self._ls, question, options, self.status)

    # --- what the server itself tells the person ----------------------------------------------

    def status(self, message: str, **fields: Any) -> None:
        self.emit("status", message=message, **fields)
        if self.progress is not None:
            self.progress.report(message)

    def error(self, message: str, kind: str, hint: str = "") -> None:
        self.emit("error", message=message, errorKind=kind, hint=hint)

    def finish(self, stop_reason: str, text: str, **fields: Any) -> None:
        """The run's last event; later calls do nothing."""
        if self.finished:
            return
        self.finished = True
        # Says when any answer was replayed from the response cache rather than the model.
        fields.setdefault("cachedTurns", self.done.cached_turns if self.done else 0)
        self.emit("done", stopReason=stop_reason, text=text, **fields)
        if self.progress is not None:
            self.progress.end(stop_reason.replace("_", " "))


def _status_of(event: Event, fields: dict[str, Any]) -> str:
    if event.kind in ("status", "error"):
        return str(fields.get("message", ""))
    if event.kind == "toolCall":
        return f"running {fields.get('name', 'a tool')}"
    if event.kind == "retry":
        return str(fields.get("text", ""))
    return ""
