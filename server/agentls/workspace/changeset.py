"""The run's pending changes: what the agent wrote, edited, deleted or renamed, not yet on disk.

Tools never write to disk (DESIGN.md decision 1). They record operations here; reads see
this overlay first. The ChangeSet keeps, per touched path, the *base* it was made against
and the *final* content, so repeated edits collapse by construction: the base is the first
one read, the latest text wins, a create followed by a delete leaves nothing.

The LSP front-end turns it into one WorkspaceEdit (``agentls.lsp.services.edits``); the CLI calls
``apply_to_disk()``, which writes every file or none.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# The parts of a ChangeSet live beside it; their names stay importable from here.
from agentls.workspace.change_model import (
    TEXT_ERRORS,
    ApplyFailed,
    Base,
    ChangeConflict,
    ChangeKind,
    ChangeSetError,
    ChangeSummary,
    FileChange,
    FileDiff,
    NotWritable,
    decode_bytes,
    encode_text,
    sha256_hex,
)

# The diff (workspace/line_diff.py) and the disk writer (workspace/disk_writer.py) are
# imported where they are used: a headless run makes its ChangeSet before its first request
# and needs neither until the model has answered.
__all__ = [
    "TEXT_ERRORS", "ApplyFailed", "Base", "ChangeConflict", "ChangeKind", "ChangeSet",
    "ChangeSetError", "ChangeSummary", "Checkpoint", "FileChange", "FileDiff", "NotWritable",
    "decode_bytes", "encode_text", "sha256_hex",
]


@dataclass
class _Entry:
    base: Base
    text: str | None  # final content; None means absent
    origin: Path | None = None  # the path this content was renamed from


@dataclass(frozen=True)
class Checkpoint:
    """An opaque copy of a ChangeSet's state (see ``ChangeSet.checkpoint``)."""

    entries: tuple[tuple[Path, Base, str | None, Path | None], ...]


def _key(path: Path | str) -> Path:
    return Path(os.path.abspath(path))


class ChangeSet:
    """Ordered pending changes, keyed by absolute path.

    Every operation takes an optional ``base``; it is used only the first time a path is
    touched (later ones keep the first). Without one the disk is read (``Base.from_disk``);
    the Workspace passes bases that know the editor's open documents.
    """

    def __init__(self) -> None:
        self._entries: dict[Path, _Entry] = {}

    # -- recording ---------------------------------------------------------------------

    def create(self, path: Path, text: str, *, base: Base | None = None) -> None:
        entry = self._touch(path, base)
        if entry.text is not None:
            raise ChangeSetError(f"{path} already exists; update it instead of creating it.")
        entry.text = text
        entry.origin = None
        self._settle(_key(path))

    def update(self, path: Path, text: str, *, base: Base | None = None) -> None:
        entry = self._touch(path, base)
        if entry.text is None:
            raise ChangeSetError(f"{path} does not exist; create it instead of updating it.")
        entry.text = text
        self._settle(_key(path))

    def write(self, path: Path, text: str, *, base: Base | None = None) -> ChangeKind:
        """Create or update, whichever the overlay calls for; returns which it was."""
        entry = self._touch(path, base)
        kind: ChangeKind = "update" if entry.text is not None else "create"
        if kind == "create":
            entry.origin = None
        entry.text = text
        self._settle(_key(path))
        return kind

    def delete(self, path: Path, *, base: Base | None = None) -> None:
        entry = self._touch(path, base)
        if entry.text is None:
            raise ChangeSetError(f"{path} does not exist; there is nothing to delete.")
        entry.text = None
        entry.origin = None
        self._settle(_key(path))

    def rename(
        self,
        src: Path,
        dst: Path,
        *,
        base: Base | None = None,
        target_base: Base | None = None,
    ) -> None:
        """Move ``src``'s current content to ``dst`` (which must not exist in the overlay)."""
        skey, dkey = _key(src), _key(dst)
        if skey == dkey:
            raise ChangeSetError(f"Cannot rename {src} onto itself.")
        source = self._touch(skey, base)
        if source.text is None:
            raise ChangeSetError(f"{src} does not exist; there is nothing to rename.")
        target = self._touch(dkey, target_base)
        if target.text is not None:
            self._settle(dkey)
            self._settle(skey)
            raise ChangeSetError(f"{dst} already exists; delete it first or pick another name.")
        target.text = source.text
        target.origin = source.origin or skey
        if target.origin == dkey:
            target.origin = None
        source.text = None
        source.origin = None
        self._settle(skey)
        self._settle(dkey)

    def clear(self) -> None:
        self._entries.clear()

    def checkpoint(self) -> Checkpoint:
        """A snapshot to ``restore``, so a multi-file tool call can stage all or nothing."""
        return Checkpoint(tuple((p, e.base, e.text, e.origin) for p, e in self._entries.items()))

    def restore(self, checkpoint: Checkpoint) -> None:
        self._entries = {
            path: _Entry(base, text, origin) for path, base, text, origin in checkpoint.entries
        }

    def _touch(self, path: Path | str, base: Base | None) -> _Entry:
        key = _key(path)
        entry = self._entries.get(key)
        if entry is None:
            first = base if base is not None else Base.from_disk(key)
            entry = _Entry(base=first, text=first.text)
            self._entries[key] = entry
        return entry

    def _settle(self, key: Path) -> None:
        # A path back at its base is untouched; forget it so its base is read afresh next time.
        entry = self._entries.get(key)
        if entry is not None and entry.text == entry.base.text and entry.origin is None:
            if any(e.origin == key for e in self._entries.values()):
                return  # still the origin of a rename target
            del self._entries[key]

    # -- the overlay -------------------------------------------------------------------

    def current_text(self, path: Path) -> str | None:
        """The pending text of ``path``; None when untouched or deleted (see is_deleted)."""
        entry = self._entries.get(_key(path))
        return entry.text if entry is not None else None

    def is_deleted(self, path: Path) -> bool:
        """True when the overlay says ``path`` does not exist (deleted or renamed away)."""
        entry = self._entries.get(_key(path))
        return entry is not None and entry.text is None

    def is_created(self, path: Path) -> bool:
        """True when ``path`` exists only in the overlay (created or renamed here)."""
        entry = self._entries.get(_key(path))
        return entry is not None and entry.text is not None and not entry.base.exists

    def touched(self, path: Path) -> bool:
        return _key(path) in self._entries

    def base(self, path: Path) -> Base | None:
        """The base recorded for ``path``, if the ChangeSet has touched it."""
        entry = self._entries.get(_key(path))
        return entry.base if entry is not None else None

    def files_under(self, directory: Path) -> list[Path]:
        """Paths the overlay says exist below ``directory`` (for listings and implied dirs)."""
        prefix = str(_key(directory)).rstrip(os.sep) + os.sep
        return [
            p for p, e in self._entries.items() if e.text is not None and str(p).startswith(prefix)
        ]

    # -- derived view ------------------------------------------------------------------

    def changes(self) -> list[FileChange]:
        """The operations that take disk from the bases to the final state, in first-touch
        order. A rename is reported only when its source is gone and its target was free;
        otherwise it is the equivalent create/update plus delete."""
        consumed: set[Path] = set()
        for path, entry in self._entries.items():
            if self._is_rename(path, entry):
                assert entry.origin is not None
                consumed.add(entry.origin)
        out: list[FileChange] = []
        for path, entry in self._entries.items():
            if path in consumed:
                continue
            if self._is_rename(path, entry):
                assert entry.origin is not None
                source = self._entries[entry.origin]
                out.append(
                    FileChange("rename", path, source.base, entry.text, entry.origin, entry.base)
                )
            elif entry.text is None:
                if entry.base.exists:
                    out.append(FileChange("delete", path, entry.base, None))
            elif not entry.base.exists:
                out.append(FileChange("create", path, entry.base, entry.text))
            elif entry.text != entry.base.text:
                out.append(FileChange("update", path, entry.base, entry.text))
        return out

    def _is_rename(self, path: Path, entry: _Entry) -> bool:
        if entry.origin is None or entry.text is None or entry.base.exists:
            return False
        source = self._entries.get(entry.origin)
        return source is not None and source.text is None and source.base.exists

    def paths(self) -> list[Path]:
        """Every path the changes affect (rename sources included), in order."""
        out: list[Path] = []
        for change in self.changes():
            if change.old_path is not None:
                out.append(change.old_path)
            out.append(change.path)
        return out

    def is_empty(self) -> bool:
        return not self.changes()

    def diff(self, name: Callable[[Path], str] | None = None) -> list[FileDiff]:
        """A unified diff per changed file; ``name`` turns a path into its header label."""
        from agentls.workspace.line_diff import file_diff

        label = name or str
        return [file_diff(change, label) for change in self.changes()]

    def summary(self) -> ChangeSummary:
        diffs = self.diff()
        return ChangeSummary.of(diffs)

    # -- writing -----------------------------------------------------------------------

    def conflicts(self) -> list[Path]:
        """Paths whose disk content no longer matches the base the change was made against."""
        found: list[Path] = []
        for change in self.changes():
            checks = [(change.old_path or change.path, change.base)]
            if change.old_path is not None:
                checks.append((change.path, change.target_base or Base.absent()))
            for path, base in checks:
                if _disk_sha256(path) != base.sha256:
                    found.append(path)
        return found

    def apply_to_disk(self) -> list[Path]:
        """Write every change, or none: returns the paths changed on disk.

        Checks every base first (``ChangeConflict``, nothing written); then writes each new
        content to a temporary file beside its target, fsyncs it and swaps it in with
        ``os.replace``. Any failure restores the files already replaced (from hard-link
        backups) and removes created files and directories (``ApplyFailed``). The ChangeSet is
        left as it is; ``clear()`` it once the caller has reported the result.
        """
        changes = self.changes()
        conflicted = self.conflicts()
        if conflicted:
            raise ChangeConflict(conflicted)
        from agentls.workspace.disk_writer import DiskWriter

        return DiskWriter().apply(changes)


def _disk_sha256(path: Path) -> str | None:
    try:
        return sha256_hex(path.read_bytes())
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:
        return "<directory>"
