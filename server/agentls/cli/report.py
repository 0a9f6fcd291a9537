"""The outcome of a headless run: why it stopped, its exit code, and the ``--json`` object.

The ``--json`` object (also ``result.json`` in the artifacts) is versioned by ``schema``; its
keys are always present, with ``null`` or ``[]`` when they do not apply, so CI scripts can
read it without checking for keys. docs/HEADLESS.md documents it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agentls.cli import exitcodes
from agentls.llm.messages import Usage

if TYPE_CHECKING:
    from agentls.engine.loop.done_marker import Completion
    from agentls.workspace.changeset import FileDiff

SCHEMA_VERSION = 1

StopReason = Literal[
    "done", "timeout", "max-iterations", "no-progress", "invalid-json", "backend-missing",
    "backend-error", "interrupted",
    # Beyond the list: the agent said it failed (json mode), the changes could not be
    # written, and the failures before any model call.
    "agent-error", "conflict", "write-failed", "artifacts-error", "prompt-not-found",
    "config-error", "usage", "session-busy",
    # The model's answer was cut at its output limit (after the continuations), or refused.
    "max-tokens", "refusal",
]
Status = Literal["done", "incomplete", "failed", "interrupted"]

EXIT_CODES: dict[str, int] = {
    "done": exitcodes.OK,
    "backend-error": exitcodes.BACKEND_ERROR,
    "agent-error": exitcodes.BACKEND_ERROR,
    "max-tokens": exitcodes.BACKEND_ERROR,
    "refusal": exitcodes.BACKEND_ERROR,
    "conflict": exitcodes.CHANGES_NOT_WRITTEN,
    "write-failed": exitcodes.CHANGES_NOT_WRITTEN,
    "backend-missing": exitcodes.NO_BACKEND,
    "no-progress": exitcodes.NO_PROGRESS,
    "max-iterations": exitcodes.MAX_ITERATIONS,
    "invalid-json": exitcodes.INVALID_JSON,
    "prompt-not-found": exitcodes.PROMPT_NOT_FOUND,
    "artifacts-error": exitcodes.ARTIFACTS_UNWRITABLE,
    "timeout": exitcodes.TIMEOUT,
    "config-error": exitcodes.CONFIG_ERROR,
    "usage": exitcodes.USAGE,
    "session-busy": exitcodes.SESSION_BUSY,
    "interrupted": exitcodes.INTERRUPTED,
}

# The engine's stop reasons, in the runner's words.
ENGINE_STOPS: dict[str, StopReason] = {
    "done": "done",
    "max_iterations": "max-iterations",
    "timeout": "timeout",
    "cancelled": "interrupted",
    "no_progress": "no-progress",
    "max_tokens": "max-tokens",
    "refusal": "refusal",
}

# Errors that mean the backend cannot be used at all, rather than that one request failed.
NO_BACKEND_KINDS = frozenset({"auth", "connection", "model_not_found"})

CHANGE_STATUS = {"create": "added", "update": "modified", "delete": "deleted",
                 "rename": "renamed"}


def status_of(reason: StopReason) -> Status:
    if reason == "done":
        return "done"
    if reason == "interrupted":
        return "interrupted"
    if reason in ("timeout", "max-iterations", "no-progress", "max-tokens"):
        return "incomplete"
    return "failed"


def usage_dict(usage: Usage) -> dict[str, int]:
    return {"promptTokens": usage.prompt_tokens, "completionTokens": usage.completion_tokens,
            "totalTokens": usage.total_tokens}


def change_dict(diff: FileDiff, display: Any) -> dict[str, Any]:
    return {
        "path": display(diff.path),
        "status": CHANGE_STATUS[diff.kind],
        "insertions": diff.insertions,
        "deletions": diff.deletions,
        "oldPath": display(diff.old_path) if diff.old_path is not None else None,
    }


@dataclass
class ErrorInfo:
    kind: str
    message: str
    hint: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "message": self.message, "hint": self.hint}


@dataclass
class IterationReport:
    index: int
    run_id: str
    duration_ms: int
    turns: int  # model requests in this run
    stop_reason: str  # the engine's, in the runner's words
    usage: Usage
    changed: bool  # whether this iteration changed any file in the pending changes
    completion: Completion | None = None
    cached_turns: int = 0  # of ``turns``, answered from the response cache
    check: dict[str, Any] | None = None  # the language servers' check of its changes

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "runId": self.run_id,
            "durationMs": self.duration_ms,
            "turns": self.turns,
            "stopReason": self.stop_reason,
            "usage": usage_dict(self.usage),
            "changed": self.changed,
            "cachedTurns": self.cached_turns,
            "completion": self.completion.to_dict() if self.completion else None,
        }


@dataclass
class Report:
    command: str
    stop_reason: StopReason = "done"
    backend: str | None = None
    model: str | None = None
    session_id: str | None = None
    duration_ms: int = 0
    iterations: list[IterationReport] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    applied: bool = False
    dry_run: bool = False
    text: str = ""
    completion_mode: str | None = None
    completion: Completion | None = None
    error: ErrorInfo | None = None
    artifacts_dir: str | None = None
    changes_note: str | None = None  # set when the changes were not made through a ChangeSet

    def stop(self, reason: StopReason, message: str = "", hint: str = "",
             kind: str | None = None) -> None:
        self.stop_reason = reason
        if message:
            self.error = ErrorInfo(kind or reason, message, hint)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.stop_reason]

    @property
    def status(self) -> Status:
        return status_of(self.stop_reason)

    @property
    def cached_turns(self) -> int:
        return sum(i.cached_turns for i in self.iterations)

    @property
    def usage(self) -> Usage:
        total = Usage()
        for iteration in self.iterations:
            total = total + iteration.usage
        return total

    def to_dict(self) -> dict[str, Any]:
        completion = None
        if self.completion_mode is not None:
            found = self.completion.to_dict() if self.completion else {
                "status": None, "summary": None, "next": None, "problem": None}
            completion = {"mode": self.completion_mode, **found}
        return {
            "schema": SCHEMA_VERSION,
            "command": self.command,
            "status": self.status,
            "stopReason": self.stop_reason,
            "exitCode": self.exit_code,
            "backend": self.backend,
            "model": self.model,
            "sessionId": self.session_id,
            "durationMs": self.duration_ms,
            "iterations": [i.to_dict() for i in self.iterations],
            "usage": usage_dict(self.usage),
            "cached": self.cached_turns > 0,
            "changes": self.changes,
            "applied": self.applied,
            "changesNote": self.changes_note,
            "dryRun": self.dry_run,
            "completion": completion,
            # The last check of the changes by the language servers (docs/LANGUAGE_SERVERS.md):
            # status clean | problems | failed | skipped, summary, files, new_problems, failures.
            "check": next((i.check for i in reversed(self.iterations) if i.check), None),
            "text": self.text,
            "error": self.error.to_dict() if self.error else None,
            "artifactsDir": self.artifacts_dir,
        }


class Stopped(Exception):
    """Ends a headless run early with a stop reason (no model was involved, or no more)."""

    def __init__(self, reason: StopReason, message: str, hint: str = "",
                 kind: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.hint = hint
        self.kind = kind
