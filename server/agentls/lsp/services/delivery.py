"""Delivering a change to the editor: the one path every change takes (a chat run's
ChangeSet, a code action's edit, a retry's), in four steps, all in ``deliver``:

1. **plan**: the ChangeSet as one ``WorkspaceEdit`` for this client's capabilities
   (lsp/services/edits.py: versioned edits, file operations, ``needsConfirmation`` annotations where
   supported), label ``AgentLS: <n> files changed``; before that, every file is checked
   against the base the agent saw: if the person changed one meanwhile, nothing is sent;
2. **send**: ``workspace/applyEdit`` (this module is its only caller; a test checks it);
3. **check**: the answer against the documents (``check_answer``): an ``applied: true``
   answer is not taken on trust: every open document the edit named by version must then
   hold the text the agent wrote, and a closed file must hold it on disk (or in the document
   the editor opened for it); files that never changed while others did were left out in the
   editor's own preview (``partly_landed``) and are recorded as not kept. Neovim's built-in
   handler skips an edit whose version is stale (the person typed while the run finished)
   and still answers ``applied: true``;
   that case is recorded as not applied, and the caller may offer a retry on the current
   text (``Delivery.retryable``, lsp/services/retry_offer.py);
4. **record**: what was kept, through the engine (``record``: the run's ``actions``
   message, and the notes the model reads first on the session's next turn,
   engine/review_notes.py).

Until ``workspace/applyEdit`` is sent, delivery can be cancelled like the run; once it is
out, the editor's answer is awaited and recorded even if the request goes away.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as lsp

from agentls.engine import review_notes
from agentls.lsp.services import documents, review_check
from agentls.lsp.services.edits import WorkspaceEditPlan, plan_workspace_edit
from agentls.lsp.services.landing import (
    LAND_WAIT_S,
    check_answer,
    moved_after_answer,
    partly_landed,
    sent_documents,
)
from agentls.lsp.services.turn import Delivery
from agentls.workspace.changeset import Base, ChangeSet, FileChange

if TYPE_CHECKING:
    from agentls.engine.sessions.store import SessionStore
    from agentls.lsp.services.server_context import ServerContext

log = logging.getLogger(__name__)

class Reporter(Protocol):
    """Where delivery tells the person what became of the change: the chat's events."""

    def error(self, message: str, kind: str, hint: str = "") -> None: ...

    def status(self, message: str, **fields: Any) -> None: ...


class _Silent:
    """No chat to tell (a code action): the caller tells the person from the Delivery."""

    def error(self, message: str, kind: str, hint: str = "") -> None:
        pass

    def status(self, message: str, **fields: Any) -> None:
        pass


@dataclass(frozen=True)
class Outgoing:
    """One change on its way to the editor."""

    session_id: str
    changeset: ChangeSet
    actions_message_id: int | None  # the run's ``actions`` message: where the review goes
    display: Callable[[Path], str]  # a path as the person reads it
    label: str | None = None  # of the applyEdit; default "AgentLS: <n> files changed"
    planned: WorkspaceEditPlan | None = None  # planned already (a code action's preview)


# --- checks and the edit ---------------------------------------------------------------------


def label_for(files: int) -> str:
    return f"AgentLS: {files} file{'' if files == 1 else 's'} changed"


def plan(ls: ServerContext, changeset: ChangeSet, display: Callable[[Path], str],
         changes: Sequence[FileChange] | None = None) -> WorkspaceEditPlan:
    """The WorkspaceEdit for this client, in the negotiated position encoding. Blocks (minimal
    edits of big files): call it in a thread."""
    return plan_workspace_edit(changeset, ls.client_capabilities,
                               position_encoding=ls.position_encoding, label="AgentLS",
                               display=display, changes=changes)


async def stale_paths(ls: ServerContext, changes: Sequence[FileChange]) -> list[Path]:
    """Files that moved on since the agent read them: an open document with a new version
    (or closed), a buffer opened with other text, or a file changed on disk."""
    checks: list[tuple[Path, Base]] = []
    for change in changes:
        checks.append((change.old_path or change.path, change.base))
        if change.old_path is not None:
            checks.append((change.path, change.target_base or Base.absent()))
    stale: list[Path] = []
    on_disk: list[tuple[Path, Base]] = []
    for path, base in checks:
        document = documents.find(ls, path)
        if base.version is not None:
            if document is None or document.version != base.version:
                stale.append(path)
        elif document is not None:
            if document.source != (base.text or ""):
                stale.append(path)
        else:
            on_disk.append((path, base))
    if on_disk:
        stale += await asyncio.to_thread(_changed_on_disk, on_disk)
    return stale


def _changed_on_disk(checks: list[tuple[Path, Base]]) -> list[Path]:
    return [path for path, base in checks if Base.from_disk(path).sha256 != base.sha256]


def stale_note(shown: str, reason: str | None) -> str:
    why = f" ({reason})" if reason else ""
    return (f"none of your changes from the last turn were applied: {shown} changed in the "
            f"editor before your edit landed{why}. Read {shown} again before changing it.")


# --- delivery --------------------------------------------------------------------------------


async def deliver(ls: ServerContext, store: SessionStore, outgoing: Outgoing, *,
                  report: Reporter | None = None,
                  on_send: Callable[[], None] = lambda: None) -> Delivery:
    """Plan, send, check and record one change (see the module's docstring). ``report``
    tells the person what went wrong (else the caller tells them from the Delivery);
    ``on_send`` is called when the edit goes out: from then on cancelling changes nothing."""
    changes = outgoing.changeset.changes()  # read once: each read walks the whole ChangeSet
    tell = report or _Silent()

    def names(paths: Iterable[Path]) -> str:
        return ", ".join(dict.fromkeys(outgoing.display(p) for p in paths))

    stale = await stale_paths(ls, changes)
    if stale:
        shown = names(stale)
        message = (f"AgentLS did not apply its changes: {shown} changed in the editor while "
                   "the agent was working. Ask again to have them redone on the current text.")
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                     message=message))
        tell.error(message, "stale", "ask again; the agent will read the file again")
        return record(store, outgoing, Delivery(
            False, f"not sent: {shown} changed during the run", stale=tuple(stale),
            message=message), [
            f"none of your changes from the last turn were applied: the person edited {shown} "
            f"while you worked. Read {shown} again before changing it."])

    workspace_caps = ls.client_capabilities.workspace
    if workspace_caps is None or not workspace_caps.apply_edit:
        message = ("AgentLS cannot send its changes: this editor does not accept "
                   "workspace/applyEdit.")
        tell.error(message, "unsupported")
        return record(store, outgoing, Delivery(False, message, message=message), [
            "your changes from the last turn were not applied: the editor cannot receive "
            "edits. Show the person the changes as text instead."])

    edit_plan = outgoing.planned
    if edit_plan is None:  # minimal edits of big files take a while: not on the event loop
        edit_plan = await asyncio.to_thread(plan, ls, outgoing.changeset, outgoing.display,
                                            changes)
    skipped = tuple(change.path for change in edit_plan.skipped)
    notes: list[str] = []
    if skipped:
        shown = names(skipped)
        tell.error(f"This editor cannot create, delete or rename files through LSP, so these "
                   f"changes were left out: {shown}.", "unsupported")
        notes.append(f"your changes to {shown} were not applied: the editor cannot create, "
                     "delete or rename files. Give the person their content as text instead.")
    sent_changes = [c for c in changes if c.path not in skipped]
    if not sent_changes:
        return record(store, outgoing, Delivery(False, "the editor cannot receive these changes",
                                                skipped=skipped), notes)
    label = outgoing.label or label_for(len(sent_changes))
    params = lsp.ApplyWorkspaceEditParams(edit=edit_plan.edit, label=label)
    sent_paths = [p for c in sent_changes for p in (c.old_path, c.path) if p is not None]
    sent = sent_documents(edit_plan.edit, sent_changes)

    async def send() -> Delivery:
        try:
            response = await ls.workspace_apply_edit_async(params)
            applied, reason = bool(response.applied), response.failure_reason
        except Exception as exc:  # the client answered with an error: nothing was applied
            applied, reason = False, f"the editor failed to apply the edit: {exc}"
        land_wait_s = LAND_WAIT_S
        if not applied:  # none, or some of it: the documents say which, once they arrive
            await moved_after_answer(ls, sent)
            reviews = await review_check.read_reviews(ls, sent_changes)
            if review_check.settled(reviews):
                return _reviewed(reviews, reason)
        else:  # applied: true, yet the editor's own preview may have kept only some files
            partly = await partly_landed(ls, sent_changes, sent)
            if partly is not None:
                return _left_out(partly)
            land_wait_s = 0.0  # waited already: what has not landed now is checked below
        applied, reason, stale = await check_answer(ls, applied, reason, sent, names,
                                                    correct, land_wait_s)
        if stale:
            shown = names(sent_paths)
            message = (f"AgentLS: its changes to {shown} did not land: {reason}. Nothing "
                       "was applied.")
            tell.error(message, "stale", "retry; the agent will read the file again")
            notes.append(stale_note(shown, reason))
            return record(store, outgoing, Delivery(
                False, reason, stale=tuple(sent_paths), skipped=skipped, sent=True,
                message=message), notes)
        if not applied:
            why = f" (the editor said: {reason})" if reason else ""
            notes.append(f"the person rejected your changes to {names(sent_paths)}{why}; "
                         "those files are as they were before your last turn.")
        return record(store, outgoing, Delivery(applied, reason, skipped=skipped, sent=True),
                      notes)

    async def correct() -> None:
        """An ``applied: true`` answer trusted before the documents changed, which a late
        didChange contradicts: the record is made again from what the documents hold (per
        file and hunk), with notes for the model's next turn."""
        reviews = await review_check.read_reviews(ls, sent_changes)
        if all(r.state == "kept" for r in reviews):
            return
        text = review_check.summary(reviews, outgoing.display)
        partial = tuple(r.record() for r in reviews) if review_check.some_kept(reviews) else ()
        late_notes = [f"correction: the editor said your last changes were applied, but {text}"
                      " (read from the documents)."]
        late_notes += review_check.notes(reviews, outgoing.display)
        log.info("the record of an applied edit corrected from the documents: %s", text)
        record(store, outgoing, Delivery(False, f"the editor answered applied, but {text}",
                                         skipped=skipped, partial=partial, sent=True),
               late_notes)

    def _left_out(reviews: list[review_check.FileReview]) -> Delivery:
        """``applied: true`` for an edit some files of which never changed: recorded as partly
        kept, told to the person (a warning and the chat's status) and to the model."""
        left = names(r.path for r in reviews if r.state != "kept")
        text = review_check.summary(reviews, outgoing.display)
        message = (f"AgentLS: the editor answered that its edit was applied, but {left} did "
                   "not change (left out in the editor's preview?): recorded as not kept.")
        log.info("%s (%s)", message, text)
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                     message=message))
        tell.status(f"review: {text}", warning=True)
        notes.extend(review_check.notes(reviews, outgoing.display))
        return record(store, outgoing, Delivery(
            False, f"the editor answered applied, but {left} did not change: {text}",
            skipped=skipped, partial=tuple(r.record() for r in reviews), sent=True,
            message=message), notes)

    def _reviewed(reviews: list[review_check.FileReview], reason: str | None) -> Delivery:
        if not review_check.some_kept(reviews):
            why = f" (the editor said: {reason})" if reason else ""
            notes.append(f"the person rejected your changes to {names(sent_paths)}{why}; "
                         "those files are as they were before your last turn.")
            return record(store, outgoing, Delivery(False, reason, skipped=skipped, sent=True),
                          notes)
        text = review_check.summary(reviews, outgoing.display)
        notes.extend(review_check.notes(reviews, outgoing.display))
        tell.status(f"review: {text}")
        return record(store, outgoing, Delivery(
            False, text, skipped=skipped, partial=tuple(r.record() for r in reviews), sent=True),
            notes)

    tell.status("waiting for your review")  # the chat's status and $/progress say so too
    on_send()
    # Kept by the server: the answer is recorded even if this request is cancelled.
    return await asyncio.shield(ls.spawn(send()))


def record(store: SessionStore, outgoing: Outgoing, delivery: Delivery,
           notes: Sequence[str]) -> Delivery:
    """What became of the change (what was kept, per file and hunk when only some of it was),
    recorded by the engine: on the run's ``actions`` message, and as notes the model reads
    first on the session's next turn (engine/review_notes.py)."""
    review_notes.record_review(store, outgoing.session_id, outgoing.actions_message_id,
                               applied=delivery.applied,
                               failure_reason=delivery.failure_reason,
                               review=list(delivery.partial) or None, notes=notes)
    return delivery
