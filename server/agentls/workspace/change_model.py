"""What a pending change is made of: the base a change was made against, one file's change,
its diff and the summary, the errors of applying, and how text and bytes convert.

Shared by the ChangeSet (``changeset.py``), its diffs (``line_diff.py``) and its disk writer
(``disk_writer.py``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ChangeKind = Literal["create", "update", "delete", "rename"]

# Lone surrogates stand for undecodable bytes, so any file round-trips byte for byte.
TEXT_ERRORS = "surrogateescape"


def encode_text(text: str) -> bytes:
    """The bytes a text is written as: UTF-8, undecodable input bytes restored as they were."""
    return text.encode("utf-8", TEXT_ERRORS)


def decode_bytes(data: bytes) -> str:
    """Inverse of :func:`encode_text`; never fails and never changes line endings."""
    return data.decode("utf-8", TEXT_ERRORS)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Base:
    """What a change was made against.

    ``text`` is the content the agent saw (the editor's buffer if open, else disk; None when
    the file did not exist). ``sha256`` is the hash of the disk bytes at that moment (None when
    not on disk) and is what ``apply_to_disk`` checks. ``version`` is the open document's
    version, which the editor checks when it applies a versioned ``TextDocumentEdit``.
    """

    text: str | None
    sha256: str | None
    version: int | None = None

    @property
    def exists(self) -> bool:
        return self.text is not None

    @property
    def kind(self) -> Literal["version", "sha256", "absent"]:
        if self.version is not None:
            return "version"
        return "sha256" if self.sha256 is not None else "absent"

    @classmethod
    def absent(cls) -> Base:
        return cls(text=None, sha256=None)

    @classmethod
    def from_disk(cls, path: Path) -> Base:
        """The base of a file nobody has open: its disk content, or absent."""
        try:
            data = Path(path).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return cls.absent()
        return cls(text=decode_bytes(data), sha256=sha256_hex(data))


@dataclass(frozen=True)
class FileChange:
    """One derived operation. ``path`` is the file after the change (the deleted file for a
    delete); ``old_path`` is the source of a rename; ``text`` is the new full text (None for a
    delete); ``base`` is the base of the source (absent for a create)."""

    kind: ChangeKind
    path: Path
    base: Base
    text: str | None
    old_path: Path | None = None
    # Base of the rename target (normally absent); apply_to_disk checks it too.
    target_base: Base | None = None


@dataclass(frozen=True)
class FileDiff:
    path: Path
    kind: ChangeKind
    diff: str
    insertions: int
    deletions: int
    old_path: Path | None = None


@dataclass(frozen=True)
class ChangeSummary:
    files: int
    created: int
    updated: int
    deleted: int
    renamed: int
    insertions: int
    deletions: int

    @classmethod
    def of(cls, diffs: Sequence[FileDiff]) -> ChangeSummary:
        return cls(
            files=len(diffs),
            created=sum(d.kind == "create" for d in diffs),
            updated=sum(d.kind == "update" for d in diffs),
            deleted=sum(d.kind == "delete" for d in diffs),
            renamed=sum(d.kind == "rename" for d in diffs),
            insertions=sum(d.insertions for d in diffs),
            deletions=sum(d.deletions for d in diffs),
        )

    def __str__(self) -> str:
        if not self.files:
            return "no changes"
        parts = [
            f"{n} {word}"
            for n, word in (
                (self.created, "created"),
                (self.updated, "updated"),
                (self.deleted, "deleted"),
                (self.renamed, "renamed"),
            )
            if n
        ]
        noun = "file" if self.files == 1 else "files"
        return f"{self.files} {noun} ({', '.join(parts)}), +{self.insertions} -{self.deletions}"


class ChangeSetError(Exception):
    """An operation that makes no sense against the overlay (e.g. updating a deleted file)."""


class ChangeConflict(Exception):
    """Files changed on disk since the ChangeSet read them; nothing was written."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = tuple(paths)
        names = ", ".join(str(p) for p in paths)
        super().__init__(
            f"Changed on disk since the agent read them: {names}. Nothing was written; "
            "re-run so the agent works from the current content."
        )


class ApplyFailed(Exception):
    """Writing failed part-way; every file already written was restored."""

    def __init__(self, path: Path, cause: BaseException, restore_errors: list[str]) -> None:
        self.path = path
        self.cause = cause
        self.restore_errors = tuple(restore_errors)
        msg = f"Could not write {path}: {cause}. "
        if restore_errors:
            msg += "Restoring earlier files also failed: " + "; ".join(restore_errors)
        else:
            msg += "Every file already written was restored; nothing changed."
        super().__init__(msg)


class NotWritable(ApplyFailed):
    """A target cannot be written (a read-only file or folder): nothing was written."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(path, PermissionError(reason), [])
        Exception.__init__(self, f"Cannot write {path}: {reason}. Nothing was written; make it "
                           "writable (chmod u+w) or leave it out of the change, then re-run.")
