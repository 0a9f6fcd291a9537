"""The one reviewed change of a turn over ACP (DESIGN.md decisions 1 and 13).

The run's ChangeSet is shown as one ``edit`` tool call holding a ``diff`` block per file, and
``session/request_permission`` asks: apply all, reject all, or (several files) apply one file
only. Nothing is written before the answer. What is kept is written through the client's
``fs/write_text_file`` when it offers it (its buffers and undo see the change), else with the
ChangeSet's atomic disk write. Either way all kept files land or none: a client that fails a
write gets the files already written put back. What became of the change is recorded on the
run's ``actions`` message and, when not everything landed, told to the model next turn.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from acp.schema import (
    AllowedOutcome,
    FileEditToolCallContent,
    PermissionOption,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

from agentls.acp import tool_calls
from agentls.engine.review_notes import record_review
from agentls.workspace.change_model import ApplyFailed, ChangeConflict, FileChange, sha256_hex
from agentls.workspace.disk_writer import DiskWriter

if TYPE_CHECKING:
    from acp.interfaces import Client

    from agentls.acp.frontend import AcpFrontend
    from agentls.engine.loop.turns import RunResult
    from agentls.engine.sessions.store import SessionStore
    from agentls.workspace.fence import Workspace

log = logging.getLogger(__name__)

ALL = "apply_all"
NONE = "reject_all"
ONLY = "only:"
MAX_PER_FILE_OPTIONS = 8  # beyond this many files the dialog offers all or nothing


@dataclass
class ReviewOutcome:
    applied: bool
    written: list[Path]
    failure: str = ""
    through_client: bool = False


async def review(conn: Client, frontend: AcpFrontend, store: SessionStore, session_id: str,
                 result: RunResult, workspace: Workspace, *, client_writes: bool) -> ReviewOutcome:
    changes = result.changeset.changes()
    call_id = f"review-{result.run_id}"
    shown = {c.path: workspace.display_path(c.old_path or c.path) for c in changes}
    diffs = [_diff(c) for c in changes]
    locations = [ToolCallLocation(path=str(c.path)) for c in changes]
    title = f"Apply the agent's changes to {len(changes)} file{'s' if len(changes) != 1 else ''}"
    frontend.send(ToolCallStart(session_update="tool_call", tool_call_id=call_id, title=title,
                                kind="edit", status="pending", content=diffs,
                                locations=locations))
    options = [PermissionOption(option_id=ALL, name="Apply all changes", kind="allow_once"),
               PermissionOption(option_id=NONE, name="Reject all changes", kind="reject_once")]
    if 1 < len(changes) <= MAX_PER_FILE_OPTIONS:
        options += [PermissionOption(option_id=f"{ONLY}{i}", name=f"Apply only {shown[c.path]}",
                                     kind="allow_once") for i, c in enumerate(changes)]
    await frontend.drain_soft()
    response = await conn.request_permission(
        session_id=session_id, options=options,
        tool_call=ToolCallUpdate(tool_call_id=call_id, title=title, kind="edit",
                                 status="pending", content=diffs, locations=locations))
    outcome = response.outcome
    chosen = outcome.option_id if isinstance(outcome, AllowedOutcome) else NONE
    if chosen == ALL:
        kept = changes
    elif chosen.startswith(ONLY) and chosen[len(ONLY):].isdigit() \
            and int(chosen[len(ONLY):]) < len(changes):
        kept = [changes[int(chosen[len(ONLY):])]]
    else:
        kept = []
    names = ", ".join(shown[c.path] for c in changes)
    if not kept:
        _record(store, session_id, result, False, "rejected in the review",
                [f"the person rejected your changes to {names}; those files are as they "
                 "were before your last turn."])
        frontend.send(_finished(call_id, "failed", "Rejected: nothing was written."))
        return ReviewOutcome(False, [], "rejected")
    # Once the answer is in, the write runs to its end even if the turn is cancelled now:
    # a half-written change is worse than a late one.
    written = asyncio.ensure_future(_write(conn, session_id, kept, client_writes))
    outcome_ = await asyncio.shield(written)
    left = [c for c in changes if c not in kept]
    notes = []
    if outcome_.applied and left:
        notes.append(f"the person kept only your changes to "
                     f"{', '.join(shown[c.path] for c in kept)}; the changes to "
                     f"{', '.join(shown[c.path] for c in left)} were rejected.")
    if not outcome_.applied:
        notes.append(f"your changes to {names} were not applied: {outcome_.failure}. The files "
                     "are as they were before your last turn.")
        frontend.send(_finished(call_id, "failed", f"Not written: {outcome_.failure}"))
    else:
        how = "through the editor" if outcome_.through_client else "to disk"
        frontend.send(_finished(call_id, "completed",
                                f"Written {how}: {', '.join(shown[c.path] for c in kept)}"))
    _record(store, session_id, result, outcome_.applied, outcome_.failure or None, notes)
    return outcome_


def _diff(change: FileChange) -> FileEditToolCallContent:
    return FileEditToolCallContent(type="diff", path=str(change.path), old_text=change.base.text,
                                   new_text=change.text if change.text is not None else "")


def _finished(call_id: str, status: Literal["completed", "failed"], text: str) -> ToolCallProgress:
    return ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id,
                            status=status,
                            content=[tool_calls.text_content(text)])


def _conflicts(changes: list[FileChange]) -> list[Path]:
    found = []
    for change in changes:
        path = change.old_path or change.path
        try:
            sha: str | None = sha256_hex(path.read_bytes())
        except (FileNotFoundError, NotADirectoryError):
            sha = None
        if sha != change.base.sha256:
            found.append(path)
    return found


async def _write(conn: Client, session_id: str, kept: list[FileChange],
                 client_writes: bool) -> ReviewOutcome:
    conflicted = await asyncio.to_thread(_conflicts, kept)
    if conflicted:
        return ReviewOutcome(False, [], str(ChangeConflict(conflicted)))
    if client_writes and all(c.kind in ("create", "update") for c in kept):
        return await _write_through_client(conn, session_id, kept)
    try:
        paths = await asyncio.to_thread(DiskWriter().apply, kept)
    except (ApplyFailed, OSError) as exc:
        return ReviewOutcome(False, [], f"writing failed and nothing was changed ({exc})")
    return ReviewOutcome(True, paths)


async def _write_through_client(conn: Client, session_id: str,
                                kept: list[FileChange]) -> ReviewOutcome:
    """Each file through ``fs/write_text_file``; on an error, the ones written are put back."""
    done: list[FileChange] = []
    for change in kept:
        assert change.text is not None
        try:
            await conn.write_text_file(session_id=session_id, path=str(change.path),
                                       content=change.text)
        except Exception as exc:
            failure = f"the editor refused to write {change.path} ({exc})"
            problems = await _undo(conn, session_id, done)
            if problems:
                failure += "; putting back the files already written failed too: " + \
                    "; ".join(problems)
            return ReviewOutcome(False, [], failure, through_client=True)
        done.append(change)
    return ReviewOutcome(True, [c.path for c in kept], through_client=True)


async def _undo(conn: Client, session_id: str, done: list[FileChange]) -> list[str]:
    problems = []
    for change in reversed(done):
        try:
            if change.base.text is None:  # created: remove it again
                await asyncio.to_thread(change.path.unlink, missing_ok=True)
            else:
                await conn.write_text_file(session_id=session_id, path=str(change.path),
                                           content=change.base.text)
        except Exception as exc:
            log.exception("putting back %s failed", change.path)
            problems.append(f"{change.path}: {exc}")
    return problems


def _record(store: SessionStore, session_id: str, result: RunResult, applied: bool,
            failure: str | None, notes: list[str]) -> None:
    record_review(store, session_id, result.actions_message_id, applied=applied,
                  failure_reason=failure, notes=notes)
