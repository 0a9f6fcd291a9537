"""Delivering a run's ChangeSet to the editor, and what the model hears about it next turn.

The whole ChangeSet goes out as one ``workspace/applyEdit`` (label ``AgentLS: <n> files
changed``) built by lsp/edits.py for this client's capabilities: versioned edits, file
operations, ``needsConfirmation`` annotations where supported. Before that, every file is
checked against the base the agent saw; if the person changed one meanwhile, nothing is
sent. The editor's answer is stored on the run's ``actions`` message; a rejection, a stale
file, a change the client could not receive or a run cancelled before its edit went out
becomes a note the model reads first on the session's next turn (kept in the session's
metadata until then).

Until ``workspace/applyEdit`` is sent, delivery can be cancelled like the run; once it is
out, the editor's answer is awaited and recorded even if the request goes away.

An ``applied: true`` answer is not taken on trust: every open document the edit named by
version must then hold the text the agent wrote (``landed``). Neovim's built-in handler
skips an edit whose version is stale (the person typed while the run finished) and still
answers ``applied: true``; that case is recorded as not applied, the model is told, the
person is told and offered a retry on the current text (``offer_retry``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from agentls.engine.review_notes import (  # re-exported: runs.py reads them here
    CANCELLED_NOTE as CANCELLED_NOTE,
)
from agentls.engine.review_notes import add_notes
from agentls.engine.review_notes import pending_notes as pending_notes
from agentls.engine.review_notes import record_withdrawn as record_withdrawn
from agentls.engine.review_notes import set_notes as set_notes
from agentls.lsp import documents, review_check
from agentls.lsp.edits import WorkspaceEditPlan, plan_workspace_edit
from agentls.lsp.turn import Delivery
from agentls.tools.changeset import Base, ChangeSet

if TYPE_CHECKING:
    from agentls.engine.agent import RunResult
    from agentls.engine.sessions import SessionStore
    from agentls.lsp.context import ServerContext
    from agentls.lsp.frontend import LspFrontend
    from agentls.tools.workspace import Workspace

def label_for(files: int) -> str:
    return f"AgentLS: {files} file{'' if files == 1 else 's'} changed"


def plan(ls: ServerContext, changeset: ChangeSet, workspace: Workspace) -> WorkspaceEditPlan:
    """The WorkspaceEdit for this client, in the negotiated position encoding."""
    return plan_workspace_edit(changeset, ls.client_capabilities,
                               position_encoding=ls.position_encoding, label="AgentLS",
                               display=workspace.display_path)


async def stale_paths(ls: ServerContext, changeset: ChangeSet) -> list[Path]:
    """Files that moved on since the agent read them: an open document with a new version
    (or closed), a buffer opened with other text, or a file changed on disk."""
    checks: list[tuple[Path, Base]] = []
    for change in changeset.changes():
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


# --- did it land? ----------------------------------------------------------------------------

LAND_WAIT_S = 2.0  # for the editor's didChange after its applyEdit answer (Neovim debounces)
MOVED_WAIT_S = 0.5  # after a refusal: whether a didChange shows the document had moved on


@dataclass(frozen=True)
class SentDocument:
    """An open document the edit named by version, and the text it holds once applied."""

    path: Path
    version: int
    expected: str


def sent_documents(edit: lsp.WorkspaceEdit, changeset: ChangeSet) -> list[SentDocument]:
    texts = {change.path: change.text for change in changeset.changes()
             if change.text is not None}
    out: list[SentDocument] = []
    for entry in edit.document_changes or ():
        if not isinstance(entry, lsp.TextDocumentEdit) or entry.text_document.version is None:
            continue
        path = documents.path_of(entry.text_document.uri)
        if path is not None and path in texts:
            out.append(SentDocument(path, entry.text_document.version, texts[path] or ""))
    return out


async def not_landed(ls: ServerContext, sent: Sequence[SentDocument],
                     wait_s: float = LAND_WAIT_S) -> list[Path]:
    """The sent documents that do not hold the agent's text once the editor's changes have
    arrived (waiting up to ``wait_s``): the edit was skipped, or was changed at once."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        missing = [s.path for s in sent if not _holds(ls, s)]
        if not missing or loop.time() >= deadline:
            return missing
        await asyncio.sleep(0.02)


def _holds(ls: ServerContext, sent: SentDocument) -> bool:
    document = documents.find(ls, sent.path)
    return document is not None and document.source == sent.expected


def moved_on(ls: ServerContext, sent: Sequence[SentDocument]) -> list[Path]:
    """Sent documents whose version is now past the one the edit named."""
    out = []
    for s in sent:
        document = documents.find(ls, s.path)
        if document is None or (document.version or 0) > s.version:
            out.append(s.path)
    return out


async def check_answer(ls: ServerContext, applied: bool, reason: str | None,
                       sent: Sequence[SentDocument],
                       names: Callable[[Iterable[Path]], str]) -> tuple[bool, str | None, bool]:
    """The truth about an applyEdit answer: ``(applied, reason, stale)``; ``stale`` when a
    document had moved on, so the edit was (or had to be) skipped."""
    if applied:
        missing = await not_landed(ls, sent)
        if not missing:
            return True, reason, False
        return False, (f"the editor answered applied, but {names(missing)} does not hold the "
                       "change: it was edited in the editor meanwhile and the editor skipped "
                       "the stale edit"), True
    stale = moved_on(ls, sent)
    if sent and not stale:  # the editor may answer before its didChange arrives (debounce)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + MOVED_WAIT_S
        while not stale and loop.time() < deadline:
            await asyncio.sleep(0.02)
            stale = moved_on(ls, sent)
    if stale and not reason:
        reason = f"{names(stale)} changed in the editor while the edit was on its way"
    return False, reason, bool(stale)


def stale_note(shown: str, reason: str | None) -> str:
    why = f" ({reason})" if reason else ""
    return (f"none of your changes from the last turn were applied: {shown} changed in the "
            f"editor before your edit landed{why}. Read {shown} again before changing it.")


def offer_retry(ls: ServerContext, message: str,
                retry: Callable[[], Awaitable[object]] | None) -> None:
    """Tell the person (showMessage), and with ``retry`` ask whether to redo it on the
    current text; the question waits in the background, the run does not."""
    if retry is None:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                     message=message))
        return

    async def ask() -> None:
        answer = await ls.window_show_message_request_async(lsp.ShowMessageRequestParams(
            type=lsp.MessageType.Warning, message=message,
            actions=[lsp.MessageActionItem(title=RETRY), lsp.MessageActionItem(title="Dismiss")]))
        if answer is not None and answer.title == RETRY:
            await retry()

    ls.spawn(ask())


RETRY = "Retry on the current text"


# --- delivery --------------------------------------------------------------------------------


async def deliver(ls: ServerContext, store: SessionStore, session_id: str,
                  result: RunResult, workspace: Workspace, frontend: LspFrontend,
                  on_send: Callable[[], None] = lambda: None,
                  retry: Callable[[], Awaitable[object]] | None = None) -> Delivery:
    """Send the run's changes as one workspace/applyEdit and record what became of them.
    ``on_send`` is called when the edit goes out: from then on cancelling changes nothing.
    ``retry`` redoes the turn; it is offered to the person when the edit did not land."""
    changeset = result.changeset

    def names(paths: Iterable[Path]) -> str:
        return ", ".join(workspace.display_path(p) for p in paths)

    stale = await stale_paths(ls, changeset)
    if stale:
        shown = names(stale)
        message = (f"AgentLS did not apply its changes: {shown} changed in the editor while "
                   "the agent was working. Ask again to have them redone on the current text.")
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                     message=message))
        frontend.error(message, "stale", "ask again; the agent will read the file again")
        return _record(store, session_id, result, Delivery(
            False, f"not sent: {shown} changed during the run", stale=tuple(stale)), [
            f"none of your changes from the last turn were applied: the person edited {shown} "
            f"while you worked. Read {shown} again before changing it."])

    workspace_caps = ls.client_capabilities.workspace
    if workspace_caps is None or not workspace_caps.apply_edit:
        message = ("AgentLS cannot send its changes: this editor does not accept "
                   "workspace/applyEdit.")
        frontend.error(message, "unsupported")
        return _record(store, session_id, result, Delivery(False, message), [
            "your changes from the last turn were not applied: the editor cannot receive "
            "edits. Show the person the changes as text instead."])

    edit_plan = await asyncio.to_thread(plan, ls, changeset, workspace)  # diffs: not on the loop
    skipped = tuple(change.path for change in edit_plan.skipped)
    notes: list[str] = []
    if skipped:
        shown = names(skipped)
        frontend.error(f"This editor cannot create, delete or rename files through LSP, so "
                       f"these changes were left out: {shown}.", "unsupported")
        notes.append(f"your changes to {shown} were not applied: the editor cannot create, "
                     "delete or rename files. Give the person their content as text instead.")
    sent_paths = [p for p in changeset.paths() if p not in skipped]
    if not sent_paths:
        return _record(store, session_id, result,
                       Delivery(False, "the editor cannot receive these changes",
                                skipped=skipped), notes)

    files = sum(1 for change in changeset.changes() if change.path not in skipped)
    params = lsp.ApplyWorkspaceEditParams(edit=edit_plan.edit, label=label_for(files))
    sent = sent_documents(edit_plan.edit, changeset)

    sent_changes = [change for change in changeset.changes() if change.path not in skipped]

    async def send() -> Delivery:
        try:
            response = await ls.workspace_apply_edit_async(params)
            applied, reason = bool(response.applied), response.failure_reason
        except Exception as exc:  # the client answered with an error: nothing was applied
            applied, reason = False, f"the editor failed to apply the edit: {exc}"
        if not applied:  # none, or some of it: the documents say which
            reviews = await review_check.read_reviews(ls, sent_changes)
            if review_check.settled(reviews):
                return _reviewed(reviews, reason)
        applied, reason, stale = await check_answer(ls, applied, reason, sent, names)
        if stale:
            shown = names(sent_paths)
            message = (f"AgentLS: its changes to {shown} did not land: {reason}. Nothing "
                       "was applied.")
            frontend.error(message, "stale", "retry; the agent will read the file again")
            offer_retry(ls, message, retry)
            notes.append(stale_note(shown, reason))
            return _record(store, session_id, result,
                           Delivery(False, reason, stale=tuple(sent_paths), skipped=skipped),
                           notes)
        if not applied:
            why = f" (the editor said: {reason})" if reason else ""
            notes.append(f"the person rejected your changes to {names(sent_paths)}{why}; "
                         "those files are as they were before your last turn.")
        return _record(store, session_id, result, Delivery(applied, reason, skipped=skipped),
                       notes)

    def _reviewed(reviews: list[review_check.FileReview], reason: str | None) -> Delivery:
        display = workspace.display_path
        if not review_check.some_kept(reviews):
            why = f" (the editor said: {reason})" if reason else ""
            notes.append(f"the person rejected your changes to {names(sent_paths)}{why}; "
                         "those files are as they were before your last turn.")
            return _record(store, session_id, result, Delivery(False, reason, skipped=skipped),
                           notes)
        text = review_check.summary(reviews, display)
        notes.extend(review_check.notes(reviews, display))
        frontend.status(f"review: {text}")
        return _record(store, session_id, result, Delivery(
            False, text, skipped=skipped, partial=tuple(r.record() for r in reviews)), notes)

    on_send()
    # Kept by the server: the answer is recorded even if this request is cancelled.
    return await asyncio.shield(ls.spawn(send()))


def _record(store: SessionStore, session_id: str, result: RunResult, delivery: Delivery,
            notes: list[str]) -> Delivery:
    if result.actions_message_id is not None:
        review = {"review": list(delivery.partial)} if delivery.partial else {}
        store.update_metadata(result.actions_message_id, applied=delivery.applied,
                              failure_reason=delivery.failure_reason, **review)
    add_notes(store, session_id, notes)
    return delivery
