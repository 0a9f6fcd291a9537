"""What the editor kept of a sent change, read from the documents afterwards (DESIGN.md 13).

An editor's answer to ``workspace/applyEdit`` is one boolean: ``applied: false`` may mean
"nothing", or "some of it" (the Neovim plugin's hunk-by-hunk review, VS Code's refactor
preview with boxes unticked). The documents' text says which: an open document's text as
the editor last sent it (the plugin flushes its changes before answering), else the file on
disk. Per file: kept, rejected, partly kept (which hunks, workspace/kept_hunks.py), or edited
otherwise by the person. From that come the line the chat shows ("kept 1 of 2 changes in
calc.py; rejected README.md"), the record in the session and the notes the model reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentls.lsp.services import documents
from agentls.workspace.kept_hunks import Hunk, hunks_and_kept

if TYPE_CHECKING:
    from agentls.lsp.services.server_context import ServerContext
    from agentls.workspace.changeset import FileChange

State = Literal["kept", "rejected", "partial", "edited"]
SETTLE_S = 0.5  # for a didChange still on its way when the text reads as neither

NEW_KIND = {"create": "created", "delete": "deleted", "rename": "renamed", "update": "changed"}


@dataclass(frozen=True)
class FileReview:
    change: FileChange
    state: State
    hunks: tuple[Hunk, ...] = ()
    kept: tuple[bool | None, ...] = ()  # per hunk of a partly kept update (None: edited)

    @property
    def path(self) -> Path:
        return self.change.path

    def record(self) -> dict[str, Any]:
        """The session's record of this file's review."""
        out: dict[str, Any] = {"path": str(self.path), "kind": self.change.kind,
                               "state": self.state}
        if self.hunks:
            out["hunks"] = len(self.hunks)
            out["kept"] = [h.index for h, k in zip(self.hunks, self.kept, strict=True) if k]
            edited = [h.index for h, k in zip(self.hunks, self.kept, strict=True) if k is None]
            if edited:
                out["edited"] = edited
        return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


async def _text(ls: ServerContext, path: Path) -> str | None:
    document = documents.find(ls, path)
    if document is not None:
        return str(document.source)
    return await asyncio.to_thread(_read, path)


async def _review(ls: ServerContext, change: FileChange) -> FileReview:
    if change.kind == "delete":
        gone = await _text(ls, change.path) is None
        return FileReview(change, "kept" if gone else "rejected")
    now = await _text(ls, change.path)
    if change.kind in ("create", "rename"):
        if now is None:
            return FileReview(change, "rejected")
        return FileReview(change, "kept" if now == (change.text or "") else "edited")
    base, proposed = change.base.text or "", change.text or ""
    if now is None:
        return FileReview(change, "edited")  # deleted meanwhile
    if now == proposed:
        return FileReview(change, "kept")
    if now == base:
        return FileReview(change, "rejected")
    found, kept = await asyncio.to_thread(_hunks_kept, base, proposed, now)
    if kept is None:
        return FileReview(change, "edited", found)
    state: State = ("kept" if all(k is True for k in kept)
                    else "rejected" if all(k is False for k in kept) else "partial")
    return FileReview(change, state, found, tuple(kept))


def _hunks_kept(base: str, proposed: str,
                now: str) -> tuple[tuple[Hunk, ...], list[bool | None] | None]:
    """The hunks of base -> proposed and which of them ``now`` holds: work the size of the
    file (tens of ms for 20,000 lines with 2,000 hunks), so off the event loop."""
    found, kept = hunks_and_kept(base, proposed, now)
    return tuple(found), kept


async def read_reviews(ls: ServerContext, changes: Sequence[FileChange],
                       settle_s: float = SETTLE_S) -> list[FileReview]:
    """Each sent change's review as the documents show it; a text that reads as neither is
    read again for up to ``settle_s`` (the editor's last didChange may follow its answer)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settle_s
    while True:
        reviews = [await _review(ls, change) for change in changes]
        if all(r.state != "edited" for r in reviews) or loop.time() >= deadline:
            return reviews
        await asyncio.sleep(0.03)


def some_kept(reviews: Sequence[FileReview]) -> bool:
    return any(r.state in ("kept", "partial") for r in reviews)


def settled(reviews: Sequence[FileReview]) -> bool:
    """Every file reads as kept, rejected or partly kept (none edited otherwise)."""
    return all(r.state != "edited" for r in reviews)


def summary(reviews: Sequence[FileReview], display: Callable[[Path], str]) -> str:
    """One line for the chat: "kept 1 of 2 changes in calc.py; rejected README.md"."""
    parts: list[str] = []
    for r in reviews:
        name = display(r.path)
        if r.change.kind != "update":
            name = f"{NEW_KIND[r.change.kind]} {name}"
        if r.state == "partial":
            n = sum(1 for k in r.kept if k is not False)
            edited = sum(1 for k in r.kept if k is None)
            more = f" ({edited} edited)" if edited else ""
            parts.append(f"kept {n} of {len(r.hunks)} changes in {name}{more}")
        elif r.state == "edited":
            parts.append(f"{name} edited during the review")
        else:
            parts.append(f"{r.state} {name}")
    return "; ".join(parts)


def _excerpt(lines: Sequence[str], limit: int = 80) -> str:
    text = " | ".join(line.rstrip("\r\n") for line in lines[:3])
    if len(lines) > 3:
        text += f" | … ({len(lines)} lines)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def notes(reviews: Sequence[FileReview], display: Callable[[Path], str]) -> list[str]:
    """What the model reads first next turn: exactly what landed, so it builds on the kept
    text and does not redo what the person rejected. The files rejected whole are one note
    (where the first of them was): "Undo Everything Left" over twenty files is one thing the
    person did, and the chat shows each note."""
    out: list[str] = []
    rejected_names = [display(r.path) for r in reviews if r.state == "rejected"]
    rejected_told = False
    for r in reviews:
        name = display(r.path)
        if r.state == "kept":
            out.append(f"the person kept your change to {name} ({NEW_KIND[r.change.kind]}).")
        elif r.state == "rejected":
            if rejected_told:
                continue
            rejected_told = True
            if len(rejected_names) == 1:
                out.append(f"the person rejected your change to {name}; it is as it was "
                           "before your last turn. Do not make it again unless asked.")
            else:
                out.append(f"the person rejected your changes to {', '.join(rejected_names)}; "
                           "they are as they were before your last turn. Do not make them "
                           "again unless asked.")
        elif r.state == "edited":
            out.append(f"the person edited {name} during the review: read it again before "
                       "changing it.")
        else:
            kept = [h for h, k in zip(r.hunks, r.kept, strict=True) if k is not False]
            rejected = [h for h, k in zip(r.hunks, r.kept, strict=True) if k is False]
            edited = [h for h, k in zip(r.hunks, r.kept, strict=True) if k is None]
            described = "; ".join(
                f"at line {h.line}: [{_excerpt(h.old) or 'nothing'}] -> "
                f"[{_excerpt(h.new) or 'nothing'}]" for h in rejected)
            rejected_text = (f" and rejected the others ({described})" if rejected else "")
            edited_text = (f" The person edited change{'s' if len(edited) > 1 else ''} "
                           f"{', '.join(str(h.index) for h in edited)} as they kept it: read "
                           f"{name} again before changing it." if edited else "")
            out.append(
                f"the person kept {len(kept)} of your {len(r.hunks)} changes to {name} "
                f"(changes {', '.join(str(h.index) for h in kept)}){rejected_text}. {name} "
                "now holds only the kept changes; do not redo the rejected ones unless asked."
                + edited_text)
    return out
