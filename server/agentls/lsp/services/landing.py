"""Did a sent edit land? The editor's answer to ``workspace/applyEdit`` checked against the
documents (step 3 of lsp/services/delivery.py): an ``applied: true`` answer is not taken on
trust. Every open document the edit named by version must then hold the agent's text
(``not_landed``); Neovim's built-in handler skips a stale edit and still answers applied
(``check_answer``); eglot sends its didChange only later (checked in the background,
``_check_later``); VS Code's refactor preview with a file unticked answers applied and changes
only the kept files (``partly_landed``). After a refusal, whether the documents had moved on
(``moved_after_answer``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from agentls.lsp.services import documents, review_check

if TYPE_CHECKING:
    from agentls.lsp.services.server_context import ServerContext
    from agentls.workspace.changeset import FileChange

log = logging.getLogger(__name__)

LAND_WAIT_S = 2.0  # for the editor's didChange after its applyEdit answer (Neovim debounces)
MOVED_WAIT_S = 0.5  # after a refusal: whether a didChange shows the document had moved on


@dataclass(frozen=True)
class SentDocument:
    """An open document the edit named by version, and the text it holds once applied."""

    path: Path
    version: int
    expected: str


def sent_documents(edit: lsp.WorkspaceEdit,
                   changes: Sequence[FileChange]) -> list[SentDocument]:
    texts = {change.path: change.text for change in changes if change.text is not None}
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
        missing = [s.path for s in await _not_holding(ls, sent)]
        if not missing or loop.time() >= deadline:
            return missing
        await asyncio.sleep(0.02)


async def _not_holding(ls: ServerContext, sent: Sequence[SentDocument]) -> list[SentDocument]:
    """The sent documents that do not hold the agent's text, in ``sent``'s order: an open one
    by its text; one closed since (a buffer wiped during the review, after it was written) by
    its file, read off the event loop (all of them in one thread hop)."""
    wrong: set[SentDocument] = set()
    closed: list[SentDocument] = []
    for s in sent:
        document = documents.find(ls, s.path)
        if document is None:
            closed.append(s)
        elif document.source != s.expected:
            wrong.add(s)
    if closed:
        wrong.update(await asyncio.to_thread(_files_not_holding, closed))
    return [s for s in sent if s in wrong]


def _files_not_holding(closed: Sequence[SentDocument]) -> list[SentDocument]:
    return [s for s in closed if not _file_holds(s)]


def _file_holds(sent: SentDocument) -> bool:
    try:
        text = sent.path.read_bytes().decode("utf-8", errors="surrogateescape")
    except OSError:
        return False
    unix = text.replace("\r\n", "\n")
    return text == sent.expected or unix == sent.expected.replace("\r\n", "\n")


def moved_on(ls: ServerContext, sent: Sequence[SentDocument]) -> list[Path]:
    """Sent documents whose version is now past the one the edit named."""
    out = []
    for s in sent:
        document = documents.find(ls, s.path)
        if document is None or (document.version or 0) > s.version:
            out.append(s.path)
    return out


async def moved_after_answer(ls: ServerContext, sent: Sequence[SentDocument]) -> list[Path]:
    """After a refusal: the sent documents that had moved on, waiting up to ``MOVED_WAIT_S``
    for a didChange the editor may send after its answer (Neovim debounces them)."""
    stale = moved_on(ls, sent)
    if sent and not stale:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + MOVED_WAIT_S
        while not stale and loop.time() < deadline:
            await asyncio.sleep(0.02)
            stale = moved_on(ls, sent)
    return stale


async def partly_landed(ls: ServerContext, changes: Sequence[FileChange],
                        sent: Sequence[SentDocument], wait_s: float = LAND_WAIT_S
                        ) -> list[review_check.FileReview] | None:
    """After an ``applied: true`` answer: each file's review when the edit landed in some files
    and not at all in others (VS Code's refactor preview with a file unticked: a didChange for
    the kept files only), else None. Waits up to ``wait_s`` for every file to hold the edit: an
    open document by its didChange, a closed file on disk (or in the document the editor opened
    for it). A file counts as left out only when it holds its old text and, open, never moved
    past the version the edit named (a stale edit the editor skipped is check_answer's case);
    when nothing landed anywhere (eglot sends its changes later) this is not the case either."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    versions = {s.path: s for s in sent}
    while True:
        reviews = await review_check.read_reviews(ls, changes, settle_s=0)
        if all(r.state == "kept" for r in reviews):
            return None
        if loop.time() >= deadline:
            break
        await asyncio.sleep(0.05)
    if not any(r.state == "kept" for r in reviews):
        return None
    left_out = [r for r in reviews if r.state != "kept"]
    if any(r.state != "rejected" or (r.path in versions and moved_on(ls, [versions[r.path]]))
           for r in left_out):
        return None
    return reviews


async def check_answer(ls: ServerContext, applied: bool, reason: str | None,
                       sent: Sequence[SentDocument],
                       names: Callable[[Iterable[Path]], str],
                       correct: Callable[[], Awaitable[None]] | None = None,
                       land_wait_s: float = LAND_WAIT_S,
                       ) -> tuple[bool, str | None, bool]:
    """The truth about an applyEdit answer: ``(applied, reason, stale)``; ``stale`` when a
    document had moved on, so the edit was (or had to be) skipped. ``correct`` is called when
    a trusted answer turns out wrong later (a didChange without the edit)."""
    if applied:
        missing = await not_landed(ls, sent, land_wait_s)
        # No didChange at all since the edit (eglot sends its changes only once the command
        # request it is answering has returned): the answer is trusted, and checked when the
        # document's change arrives (DESIGN.md 13), never reported "not applied" before.
        unheard = [s for s in sent if s.path in missing and not moved_on(ls, [s])]
        if unheard:
            ls.spawn(_check_later(ls, unheard, names, correct))
            missing = [p for p in missing if p not in {s.path for s in unheard}]
        if not missing:
            return True, reason, False
        return False, (f"the editor answered applied, but {names(missing)} does not hold the "
                       "change: it was edited in the editor meanwhile and the editor skipped "
                       "the stale edit"), True
    stale = await moved_after_answer(ls, sent)
    if stale and not reason:
        reason = f"{names(stale)} changed in the editor while the edit was on its way"
    return False, reason, bool(stale)


LATE_CHECK_S = 60.0  # how long an applied edit's didChange is waited for, in the background


async def _check_later(ls: ServerContext, sent: Sequence[SentDocument],
                       names: Callable[[Iterable[Path]], str],
                       correct: Callable[[], Awaitable[None]] | None) -> None:
    """An applied edit whose documents had not changed yet: once they do, they must hold it;
    when one does not, the person is told and the record is corrected (``correct``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LATE_CHECK_S
    waiting = list(sent)
    while waiting and loop.time() < deadline:
        await asyncio.sleep(0.05)
        arrived = [s for s in waiting if moved_on(ls, [s])]
        wrong = [s.path for s in await _not_holding(ls, arrived)]
        if wrong:
            message = (f"AgentLS: the editor answered that its edit was applied, but "
                       f"{names(wrong)} does not hold the change; check the file.")
            log.warning(message)
            ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                         message=message))
            if correct is not None:
                await correct()
                return  # the record now says what every file holds
        waiting = [s for s in waiting if s not in arrived]
