"""One turn as the editor sees it: the request (the engine's ``RunRequest``, with the editor's
options: session, progress, rate limit, delivery), the turn's outcome (text, stop reason,
the run's changes) and how its edit was delivered. Plain records, a leaf of the lsp package:
``runs.py`` fills them, ``delivery.py`` sends the edit, ``context.py`` names them for
``ls.runs``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agentls.lsp.services.protocol import (
    REQUEST_FAILED,
    ChatResult,
    ErrorPayload,
    FileChangePayload,
)

if TYPE_CHECKING:
    from agentls.engine.host import EngineHost
    from agentls.engine.loop.turns import RunResult
    from agentls.engine.run_request import RunRequest
    from agentls.workspace.fence import Workspace


class Runs(Protocol):
    """What features use of the run manager (lsp/services/runs.py ``RunManager``), named here so the
    context (lsp/services/server_context.py) types it without importing runs."""

    requested: int

    async def run(self, request: TurnRequest, host: EngineHost) -> Turn: ...

    def cancel(self, run_id: str) -> bool: ...


class TurnRefused(Exception):
    """The request cannot run (no workspace, unknown session, queue full): an LSP error
    (lsp/services/handlers.py answers it)."""

    def __init__(self, message: str, *, code: int = REQUEST_FAILED,
                 data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data


@dataclass(frozen=True)
class Delivery:
    applied: bool | None  # None: nothing was sent
    failure_reason: str | None = None
    stale: tuple[Path, ...] = ()
    skipped: tuple[Path, ...] = ()  # changes this client cannot receive as an edit
    # Some of it kept, some not (a partial review, lsp/services/review_check.py): per file, its
    # record.
    partial: tuple[dict[str, Any], ...] = ()
    sent: bool = False  # the workspace/applyEdit went out
    message: str | None = None  # what the person was told, when it did not land

    @property
    def retryable(self) -> bool:
        """Sent but skipped or refused because a document had moved on: worth redoing on
        the current text."""
        return self.sent and bool(self.stale)


@dataclass
class TurnRequest:
    """What the editor asked: the engine's ``RunRequest`` (the prompt and what goes with it,
    passed to ``Agent.run`` as it is) and how the editor wants it run."""

    run: RunRequest
    session_id: str | None = None  # None: a new session
    mode: Literal["chat", "automation"] = "chat"
    title: str | None = None  # of a new session; default: from the prompt
    work_done_token: str | int | None = None  # the client's, when it sent one
    progress_title: str = "AgentLS"
    rate_limited: bool = True  # counts against lsp.chat_requests_per_minute
    interactive: bool = True  # approvals and ask_user go to the person
    send_edit: bool = True  # False: the caller turns turn.result.changeset into an edit itself
    run_id: str | None = None  # chosen by the caller (a command that answers with it at once)


@dataclass
class Turn:
    session_id: str
    run_id: str
    stop_reason: str = "cancelled"
    text: str = ""
    result: RunResult | None = None  # None when the run never started
    workspace: Workspace | None = None
    delivery: Delivery | None = None
    error: ErrorPayload | None = None

    def changes(self) -> list[FileChangePayload]:
        if self.result is None or not self.result.send_changes or self.stop_reason == "cancelled":
            return []
        out: list[FileChangePayload] = []
        for diff in self.result.diffs:
            item: FileChangePayload = {"uri": diff.path.as_uri(), "kind": diff.kind,
                                       "insertions": diff.insertions,
                                       "deletions": diff.deletions}
            if diff.old_path is not None:
                item["oldUri"] = diff.old_path.as_uri()
            out.append(item)
        return out

    @property
    def applied(self) -> bool | None:
        return self.delivery.applied if self.delivery is not None else None

    def chat_result(self) -> ChatResult:
        out: ChatResult = {"sessionId": self.session_id, "runId": self.run_id,
                           "text": self.text, "stopReason": self.stop_reason,
                           "changes": self.changes(), "applied": self.applied}
        if self.delivery is not None and self.delivery.failure_reason:
            out["failureReason"] = self.delivery.failure_reason
        if self.delivery is not None and self.delivery.partial:
            out["partial"] = True
        if self.error is not None:
            out["error"] = self.error
        return out
