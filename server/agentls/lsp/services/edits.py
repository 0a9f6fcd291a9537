"""A ChangeSet as one LSP WorkspaceEdit (DESIGN.md decision 1).

What the client gets depends on what it declared in
``workspace.workspaceEdit``:

- ``documentChanges``: versioned ``TextDocumentEdit``s (the open document's version, null
  for files not open) with minimal ``TextEdit``s, plus ``CreateFile`` / ``RenameFile`` /
  ``DeleteFile`` for the kinds listed in ``resourceOperations``.
- ``changeAnnotationSupport`` as well: one ``ChangeAnnotation`` per file with
  ``needsConfirmation: true`` (the editor shows its refactor preview) and every edit and
  resource operation annotated with it.
- Neither: the plain ``changes`` map, which can only edit files that exist.

A client that lists ``resourceOperations`` but not ``documentChanges`` (Neovim up to at
least 0.11) is treated as supporting ``documentChanges``: resource operations can only be
sent there, and Neovim applies them.

Fallbacks when a resource operation is missing: a rename becomes create + full text +
delete when the client can create and delete; anything the client cannot express at all
(creating without ``create``, deleting without ``delete``, any file operation with only
``changes``) is left out of the edit and returned in ``WorkspaceEditPlan.skipped``, so the
caller can tell the person, or write those files itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types as lsp

from agentls.base.text_positions import ENCODINGS, Positions
from agentls.workspace.changeset import ChangeSet, FileChange, FileDiff
from agentls.workspace.line_diff import file_diff, line_opcodes, split_lines

log = logging.getLogger(__name__)

# -- positions ---------------------------------------------------------------------------


def _at(positions: Positions, offset: int) -> lsp.Position:
    line, character = positions.at(offset)
    return lsp.Position(line=line, character=character)


def _check_encoding(encoding: str) -> str:
    value = str(getattr(encoding, "value", encoding)).lower()
    if value not in ENCODINGS:
        raise ValueError(f"Unknown position encoding {encoding!r}; expected one of {ENCODINGS}.")
    return value


# -- minimal text edits --------------------------------------------------------------------


def _common_prefix(a: str, b: str) -> int:
    # Binary search with slice comparisons: C-speed memcmp instead of a Python char loop.
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    lo, hi = 0, min(len(a), len(b), limit)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def minimal_text_edits(old: str, new: str, encoding: str = "utf-16") -> list[lsp.TextEdit]:
    """Non-overlapping TextEdits, in document order, that turn ``old`` into ``new``.

    Lines are matched with difflib; each changed region is then trimmed to the characters
    that really differ, so a one-word change is a one-word edit. Positions count code units
    of ``encoding`` ("utf-16", the LSP default, "utf-8" or "utf-32"); a position never falls
    between the \\r and \\n of a CRLF.
    """
    encoding = _check_encoding(encoding)
    if old == new:
        return []
    a, b = split_lines(old), split_lines(new)
    a_offsets = [0]
    for line in a:
        a_offsets.append(a_offsets[-1] + len(line))
    b_offsets = [0]
    for line in b:
        b_offsets.append(b_offsets[-1] + len(line))
    positions = Positions(old, encoding)
    edits: list[lsp.TextEdit] = []
    for tag, i1, i2, j1, j2 in line_opcodes(a, b):
        if tag == "equal":
            continue
        start, end = a_offsets[i1], a_offsets[i2]
        new_start, new_end = b_offsets[j1], b_offsets[j2]
        old_part, new_part = old[start:end], new[new_start:new_end]
        head = _common_prefix(old_part, new_part)
        tail = _common_suffix(old_part, new_part, min(len(old_part), len(new_part)) - head)
        s, e = start + head, end - tail
        # Keep CRLF whole: step outside a pair rather than cut it (both sides agree there).
        if 0 < s < len(old) and old[s - 1] == "\r" and old[s] == "\n" and head:
            s -= 1
            head -= 1
        if 0 < e < len(old) and old[e - 1] == "\r" and old[e] == "\n" and tail:
            e += 1
            tail -= 1
        replacement = new[new_start + head : new_end - tail]
        end_position = _at(positions, e)
        if not old:
            # An empty document: end one line past it. Clients clamp the range (VS Code), and
            # Neovim then drops the empty line it would otherwise leave after the new text.
            end_position = lsp.Position(line=1, character=0)
        elif s == e == len(old) and replacement:
            s, e, replacement = _before_final_newline(old, replacement)
            end_position = _at(positions, e)
        edits.append(
            lsp.TextEdit(range=lsp.Range(_at(positions, s), end_position), new_text=replacement)
        )
    return edits


def _before_final_newline(old: str, inserted: str) -> tuple[int, int, str]:
    """An insertion at the very end of a text that ends in a newline, moved before that
    newline: ``P+nl`` + ``T+nl`` is ``P`` + ``nl+T`` + ``nl``. Same result everywhere, but
    Neovim renders an insertion on the line past the end with one extra empty line."""
    newline = next((nl for nl in ("\r\n", "\n", "\r") if old.endswith(nl)), "")
    if not newline or not inserted.endswith(newline):
        return len(old), len(old), inserted
    at = len(old) - len(newline)
    return at, at, newline + inserted[: -len(newline)]


# -- the WorkspaceEdit ---------------------------------------------------------------------


@dataclass(frozen=True)
class WorkspaceEditPlan:
    edit: lsp.WorkspaceEdit
    skipped: tuple[FileChange, ...]  # changes this client cannot receive as an edit


@dataclass(frozen=True)
class _Support:
    document_changes: bool
    create: bool
    rename: bool
    delete: bool
    annotations: bool

    @classmethod
    def of(cls, caps: lsp.ClientCapabilities | None) -> _Support:
        ws = caps.workspace.workspace_edit if caps and caps.workspace else None
        if ws is None:
            return cls(False, False, False, False, False)
        ops = {str(getattr(op, "value", op)) for op in ws.resource_operations or ()}
        # Resource operations only exist inside documentChanges, so declaring them implies it
        # (Neovim declares resourceOperations but not documentChanges, and handles both).
        doc = bool(ws.document_changes) or bool(ops & {"create", "rename", "delete"})
        return cls(
            document_changes=doc,
            create=doc and "create" in ops,
            rename=doc and "rename" in ops,
            delete=doc and "delete" in ops,
            annotations=doc and ws.change_annotation_support is not None,
        )


def _uri(path: Path) -> str:
    return path.as_uri()


def plan_workspace_edit(
    changeset: ChangeSet,
    client_capabilities: lsp.ClientCapabilities | None,
    *,
    position_encoding: str = "utf-16",
    label: str = "AgentLS",
    display: Callable[[Path], str] | None = None,
    changes: Sequence[FileChange] | None = None,
) -> WorkspaceEditPlan:
    """The WorkspaceEdit for ``changeset`` plus the changes this client cannot receive
    (``changes``: the changeset's, when the caller has read them already)."""
    encoding = _check_encoding(position_encoding)
    support = _Support.of(client_capabilities)
    name = display or str
    if changes is None:
        changes = changeset.changes()
    if not support.document_changes:
        return _plain_changes(changes, encoding)
    diffs = {c.path: file_diff(c, name) for c in changes} if support.annotations else {}

    document_changes: list[lsp.TextDocumentEdit | lsp.CreateFile | lsp.RenameFile | lsp.DeleteFile]
    document_changes = []
    annotations: dict[str, lsp.ChangeAnnotation] = {}
    skipped: list[FileChange] = []
    for change in changes:
        annotation_id: str | None = None
        if support.annotations:
            annotation_id = _annotate(annotations, change, diffs[change.path], name, label)
        entries = _document_changes(change, support, encoding, annotation_id)
        if entries is None:
            skipped.append(change)
            if annotation_id is not None:
                del annotations[annotation_id]
            continue
        document_changes.extend(entries)
    edit = lsp.WorkspaceEdit(
        document_changes=document_changes, change_annotations=annotations or None
    )
    return WorkspaceEditPlan(edit, tuple(skipped))


def to_workspace_edit(
    changeset: ChangeSet,
    client_capabilities: lsp.ClientCapabilities | None,
    *,
    position_encoding: str = "utf-16",
    label: str = "AgentLS",
    display: Callable[[Path], str] | None = None,
) -> lsp.WorkspaceEdit:
    """The ChangeSet as one WorkspaceEdit for this client (see the module notes).

    Changes the client cannot receive are left out and logged; use ``plan_workspace_edit``
    to get them back and tell the person.
    """
    plan = plan_workspace_edit(
        changeset,
        client_capabilities,
        position_encoding=position_encoding,
        label=label,
        display=display,
    )
    for change in plan.skipped:
        log.warning("client cannot receive %s of %s as an edit; left out", change.kind, change.path)
    return plan.edit


def _plain_changes(changes: Sequence[FileChange], encoding: str) -> WorkspaceEditPlan:
    edits: dict[str, list[lsp.TextEdit]] = {}
    skipped: list[FileChange] = []
    for change in changes:
        if change.kind != "update":
            skipped.append(change)
            continue
        assert change.text is not None and change.base.text is not None
        text_edits = minimal_text_edits(change.base.text, change.text, encoding)
        if text_edits:
            edits[_uri(change.path)] = text_edits
    return WorkspaceEditPlan(lsp.WorkspaceEdit(changes=edits), tuple(skipped))


def _annotate(
    annotations: dict[str, lsp.ChangeAnnotation],
    change: FileChange,
    diff: FileDiff,
    name: Callable[[Path], str],
    label: str,
) -> str:
    shown = name(change.path)
    if change.old_path is not None:
        shown = f"{name(change.old_path)} → {shown}"
    annotation_id = shown
    annotations[annotation_id] = lsp.ChangeAnnotation(
        label=f"{label}: {change.kind} {shown}",
        needs_confirmation=True,
        description=f"+{diff.insertions} -{diff.deletions}",
    )
    return annotation_id


def _text_edit(
    old: str, new: str, encoding: str, annotation_id: str | None
) -> list[lsp.TextEdit | lsp.AnnotatedTextEdit]:
    edits = minimal_text_edits(old, new, encoding)
    if annotation_id is None:
        return list(edits)
    return [
        lsp.AnnotatedTextEdit(annotation_id=annotation_id, range=e.range, new_text=e.new_text)
        for e in edits
    ]


def _document_edit(
    path: Path,
    version: int | None,
    old: str,
    new: str,
    encoding: str,
    annotation_id: str | None,
) -> list[lsp.TextDocumentEdit]:
    edits = _text_edit(old, new, encoding, annotation_id)
    if not edits:
        return []
    document = lsp.OptionalVersionedTextDocumentIdentifier(uri=_uri(path), version=version)
    return [lsp.TextDocumentEdit(text_document=document, edits=edits)]


def _document_changes(
    change: FileChange, support: _Support, encoding: str, annotation_id: str | None
) -> list[lsp.TextDocumentEdit | lsp.CreateFile | lsp.RenameFile | lsp.DeleteFile] | None:
    """The documentChanges entries for one change, or None if this client can't do it."""
    out: list[lsp.TextDocumentEdit | lsp.CreateFile | lsp.RenameFile | lsp.DeleteFile] = []
    if change.kind == "update":
        assert change.text is not None and change.base.text is not None
        out += _document_edit(
            change.path,
            change.base.version,
            change.base.text,
            change.text,
            encoding,
            annotation_id,
        )
        return out
    if change.kind == "delete":
        if not support.delete:
            return None
        return [lsp.DeleteFile(uri=_uri(change.path), annotation_id=annotation_id)]
    assert change.text is not None
    if change.kind == "create":
        if not support.create:
            return None
        out.append(lsp.CreateFile(uri=_uri(change.path), annotation_id=annotation_id))
        out += _document_edit(change.path, None, "", change.text, encoding, annotation_id)
        return out
    # rename
    assert change.old_path is not None and change.base.text is not None
    if support.rename:
        out.append(
            lsp.RenameFile(
                old_uri=_uri(change.old_path),
                new_uri=_uri(change.path),
                annotation_id=annotation_id,
            )
        )
        out += _document_edit(
            change.path, None, change.base.text, change.text, encoding, annotation_id
        )
        return out
    if support.create and support.delete:
        out.append(lsp.CreateFile(uri=_uri(change.path), annotation_id=annotation_id))
        out += _document_edit(change.path, None, "", change.text, encoding, annotation_id)
        out.append(lsp.DeleteFile(uri=_uri(change.old_path), annotation_id=annotation_id))
        return out
    return None
