"""The two ways a headless iteration runs, behind one small interface.

``EngineRunner``: our engine on a model server. Tools write into a ChangeSet shared by every
iteration of the command; ``settle`` writes it atomically (all files or none) or only
reports it (``--dry-run``, Ctrl-C).

``ExternalRunner``: an installed agent CLI (codex, copilot, claude; see
``agentls.engine.external``). The CLI edits files itself, so there is nothing to hold back:
``settle`` lists what it changed from ``git status`` before the first iteration and after
the last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentls.cli.report import (
    CHANGE_STATUS,
    ENGINE_STOPS,
    NO_BACKEND_KINDS,
    ErrorInfo,
    StopReason,
    change_dict,
)
from agentls.engine.events import FileChangeInfo, Frontend
from agentls.engine.loop.agent import Agent, RunRequest
from agentls.engine.loop.turns import RunResult
from agentls.engine.sessions.store import SessionInfo, SessionStore
from agentls.llm.messages import Usage
from agentls.llm.pool import BackendPool
from agentls.settings.config import BackendConfig, Settings
from agentls.workspace.apply_leftovers import clean_stale
from agentls.workspace.changeset import ApplyFailed, ChangeConflict, ChangeSet, FileDiff
from agentls.workspace.fence import Workspace


@dataclass
class Outcome:
    """One iteration, in the runner's words; ``error`` explains any stop but ``done``."""

    reason: StopReason
    run_id: str
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    changed: bool = False
    error: ErrorInfo | None = None
    cached_turns: int = 0  # answers replayed from the response cache
    check: dict[str, Any] | None = None  # the loop's check of its changes (engine/check.py)


@dataclass
class Settlement:
    changes: list[dict[str, Any]]
    applied: bool
    diffs: list[FileDiff] = field(default_factory=list)  # for --dry-run's display
    failure: tuple[StopReason, ErrorInfo] | None = None  # the changes could not be written
    note: str | None = None  # where the list of changes comes from, when not a ChangeSet


class Runner(Protocol):
    backend: str
    model: str | None
    session_id: str | None

    async def run(self, prompt: str, *, iteration: int, timeout_s: float | None) -> Outcome: ...

    def cancel(self) -> bool:
        """Stop the iteration in progress cleanly; False when the caller must cancel it."""
        ...

    async def settle(self, *, write: bool, why_not: str) -> Settlement: ...

    async def close(self) -> None: ...


class _OneBackend:
    """The engine asks for the session's backend by name; a headless run uses the one its
    flags, the session or the configuration chose."""

    def __init__(self, pool: BackendPool, name: str) -> None:
        self.pool = pool
        self.name = name

    def get(self, name: str | None = None) -> Any:
        return self.pool.get(self.name)


class EngineRunner:
    def __init__(self, settings: Settings, root: Path, store: SessionStore,
                 session: SessionInfo, frontend: Frontend, *, use_cache: bool) -> None:
        self.settings = settings
        self.backend = settings.backend
        self.model: str | None = settings.active_backend.model
        self.session_id: str | None = session.id
        self.store = store
        self.frontend = frontend
        self.use_cache = use_cache
        self.pool = BackendPool(settings)
        self.agent = Agent(settings, _OneBackend(self.pool, settings.backend), store)
        self.workspace = Workspace([root])  # one ChangeSet for every iteration
        clean_stale()  # files of an apply killed midway, named in its journal
        self._run_id: str | None = None
        self._actions: list[int] = []

    async def run(self, prompt: str, *, iteration: int, timeout_s: float | None) -> Outcome:
        assert self.session_id is not None
        before = _fingerprint(self.workspace.changeset)
        run_id = self._run_id = self.agent.new_run_id()
        request = RunRequest(prompt, timeout_s=timeout_s, use_cache=self.use_cache)
        try:
            result = await self.agent.run(self.session_id, request, self.frontend,
                                          self.workspace, run_id=run_id)
        finally:
            self._run_id = None
        if result.actions_message_id is not None:
            self._actions.append(result.actions_message_id)
        reason, error = _engine_stop(result)
        return Outcome(reason, run_id, result.text, result.usage, result.iterations,
                       _fingerprint(self.workspace.changeset) != before, error,
                       result.cached_turns, result.check)

    def cancel(self) -> bool:
        return self._run_id is not None and self.agent.cancel(self._run_id)

    async def settle(self, *, write: bool, why_not: str) -> Settlement:
        changeset = self.workspace.changeset
        diffs = changeset.diff(self.workspace.display_path)
        settled = Settlement([change_dict(d, self.workspace.display_path) for d in diffs],
                             applied=False, diffs=diffs)
        reason = why_not if diffs and not write else None
        if diffs and write:
            try:
                changeset.apply_to_disk()
                settled.applied = True
                changeset.clear()
            except ChangeConflict as exc:
                reason = "conflict"
                settled.failure = ("conflict", ErrorInfo(
                    "conflict", str(exc), "re-run so the agent works from the current content"))
            except ApplyFailed as exc:
                reason = "write failed"
                settled.failure = ("write-failed", ErrorInfo(
                    "write-failed", str(exc),
                    "check the folder's permissions and free space, then re-run"))
        for message_id in self._actions:
            fields: dict[str, Any] = {"applied": settled.applied}
            if reason:
                fields["failure_reason"] = reason
            self.store.update_metadata(message_id, **fields)
        return settled

    async def close(self) -> None:
        await self.agent.aclose()
        await self.pool.aclose()


class ExternalRunner:
    def __init__(self, settings: Settings, name: str, config: BackendConfig, root: Path,
                 frontend: Frontend, *, model: str | None) -> None:
        self.settings = settings
        self.backend = name
        self.config = config
        self.root = root
        self.frontend = frontend
        self.chosen_model = model
        self.model = model or (config.model if "model" in config.model_fields_set else None)
        self.session_id: str | None = None
        self._before: Any = None
        self._note: str | None = None

    async def run(self, prompt: str, *, iteration: int, timeout_s: float | None) -> Outcome:
        from agentls.engine.external import git_snapshot, run_external

        if self._before is None:
            self._before = await git_snapshot(self.root)
        result = await run_external(
            self.config, self.backend, prompt, self.root, self.frontend,
            settings=self.settings, model=self.chosen_model,
            timeout_s=timeout_s or self.settings.timeout_ms / 1000, iteration=iteration)
        self._note = result.changes_note
        self.session_id = result.session_id or self.session_id
        reason: StopReason = "done"
        error = None
        if result.stop_reason == "timeout":
            reason = "timeout"
        elif result.stop_reason == "error":
            reason = "backend-missing" if result.error_kind in ("auth", "missing") \
                else "backend-error"
        if reason != "done":
            error = ErrorInfo(result.error_kind or reason,
                              f"{result.label}: {result.error_message}", result.hint)
        return Outcome(reason, f"{result.cli}-{iteration}", result.text, result.usage, 1,
                       bool(result.files), error)

    def cancel(self) -> bool:
        return False  # the CLI stops when its task is cancelled

    async def settle(self, *, write: bool, why_not: str) -> Settlement:
        from agentls.engine.external import changed_files

        if self._before is None:
            return Settlement([], applied=False)
        files = await changed_files(self.root, self._before)
        return Settlement([_info_dict(f) for f in files], applied=bool(files),
                          note=self._note if files or not self._before.root else None)

    async def close(self) -> None:
        return None


def _engine_stop(result: RunResult) -> tuple[StopReason, ErrorInfo | None]:
    if result.stop_reason == "error":
        error = result.error
        # A stream cut mid-answer came from a server that was reachable: a backend error.
        reason: StopReason = ("backend-missing" if error is not None
                              and error.kind in NO_BACKEND_KINDS and error.partial is None
                              else "backend-error")
        if error is None:
            return reason, ErrorInfo(reason, result.error_message)
        return reason, ErrorInfo(error.kind, str(error), error.hint)
    reason = ENGINE_STOPS[result.stop_reason]
    if reason == "timeout":
        return reason, ErrorInfo("timeout", result.error_message or "the run timed out",
                                 "raise --timeout (or timeout_ms), or split the task")
    if reason == "max-iterations":
        return reason, ErrorInfo("max-iterations", f"the agent was still working after "
                                 f"{result.iterations} model turns",
                                 "raise max_iterations (--max-iterations on run), or split "
                                 "the task")
    if reason == "max-tokens":
        return reason, ErrorInfo("max-tokens", "the model's answer was cut at its output "
                                 "limit, even after being asked to continue",
                                 "ask for less at a time, or use a model with a larger output "
                                 "limit")
    if reason == "refusal":
        return reason, ErrorInfo("refusal", "the model refused the request, or its server's "
                                 "content filter stopped the answer", "rephrase the request")
    if reason == "no-progress":
        return reason, ErrorInfo("no-progress", "the agent repeated the same step three "
                                 "times in a row", "rephrase the prompt or split the task")
    return reason, None


def _fingerprint(changeset: ChangeSet) -> tuple[tuple[str, str, str, int], ...]:
    return tuple((c.kind, str(c.path), str(c.old_path), hash(c.text))
                 for c in changeset.changes())


def _info_dict(info: FileChangeInfo) -> dict[str, Any]:
    return {"path": info.path, "status": CHANGE_STATUS.get(info.kind, info.kind),
            "insertions": info.insertions, "deletions": info.deletions,
            "oldPath": info.old_path}
