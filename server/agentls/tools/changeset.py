"""The run's pending changes: what the agent wrote, edited, deleted or renamed, not yet on disk.

Tools never write to disk (DESIGN.md decision 1). They record operations here; reads see
this overlay first. The ChangeSet keeps, per touched path, the *base* it was made against
and the *final* content, so repeated edits collapse by construction: the base is the first
one read, the latest text wins, a create followed by a delete leaves nothing.

The LSP front-end turns it into one WorkspaceEdit (``agentls.lsp.edits``); the CLI calls
``apply_to_disk()``, which writes every file or none.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import hashlib
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentls.tools.apply_leftovers import WriteJournal, hide_from_git, leftover_name

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
        label = name or str
        return [file_diff(change, label) for change in self.changes()]

    def summary(self) -> ChangeSummary:
        diffs = self.diff()
        return ChangeSummary(
            files=len(diffs),
            created=sum(d.kind == "create" for d in diffs),
            updated=sum(d.kind == "update" for d in diffs),
            deleted=sum(d.kind == "delete" for d in diffs),
            renamed=sum(d.kind == "rename" for d in diffs),
            insertions=sum(d.insertions for d in diffs),
            deletions=sum(d.deletions for d in diffs),
        )

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
        return _DiskWriter().apply(changes)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def _disk_sha256(path: Path) -> str | None:
    try:
        return sha256_hex(path.read_bytes())
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:
        return "<directory>"


def split_lines(text: str) -> list[str]:
    """Lines with their endings kept; only \\n, \\r\\n and \\r end a line (as in LSP)."""
    return _LINE.findall(text)


Opcode = tuple[str, int, int, int, int]

# Regions up to this many line pairs are re-matched without autojunk (quadratic-ish cost).
_REFINE_LIMIT = 250_000


def line_opcodes(a: list[str], b: list[str]) -> list[Opcode]:
    """difflib opcodes between two line lists, fast on long files and precise where it counts.

    The common head and tail are matched first (an agent edit usually touches a few lines of a
    long file). The middle is matched with autojunk, which is fast but cannot anchor on
    frequent lines (blank, "}"); each changed region it leaves is then re-matched without
    autojunk when small, or line by line when both sides have the same length.
    """
    n = min(len(a), len(b))
    head = 0
    while head < n and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < n - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    ops: list[Opcode] = []
    if head:
        ops.append(("equal", 0, head, 0, head))
    a_end, b_end = len(a) - tail, len(b) - tail
    if head < a_end or head < b_end:
        matcher = difflib.SequenceMatcher(None, a[head:a_end], b[head:b_end])
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            i1, i2, j1, j2 = i1 + head, i2 + head, j1 + head, j2 + head
            if tag == "replace":
                ops.extend(_refine(a, b, i1, i2, j1, j2))
            else:
                ops.append((tag, i1, i2, j1, j2))
    if tail:
        ops.append(("equal", a_end, len(a), b_end, len(b)))
    return ops


def _refine(a: list[str], b: list[str], i1: int, i2: int, j1: int, j2: int) -> list[Opcode]:
    if (i2 - i1) * (j2 - j1) <= _REFINE_LIMIT:
        matcher = difflib.SequenceMatcher(None, a[i1:i2], b[j1:j2], autojunk=False)
        return [
            (t, x1 + i1, x2 + i1, y1 + j1, y2 + j1) for t, x1, x2, y1, y2 in matcher.get_opcodes()
        ]
    if i2 - i1 != j2 - j1:
        return [("replace", i1, i2, j1, j2)]
    ops: list[Opcode] = []
    for k in range(i2 - i1):
        tag = "equal" if a[i1 + k] == b[j1 + k] else "replace"
        if ops and ops[-1][0] == tag:
            _, x1, _, y1, _ = ops[-1]
            ops[-1] = (tag, x1, i1 + k + 1, y1, j1 + k + 1)
        else:
            ops.append((tag, i1 + k, i1 + k + 1, j1 + k, j1 + k + 1))
    return ops


def _unified(old: str, new: str, from_label: str, to_label: str) -> list[str]:
    a, b = split_lines(old), split_lines(new)
    out: list[str] = []
    for line in difflib.unified_diff(a, b, from_label, to_label, lineterm="\n"):
        if line.endswith(("\n", "\r")):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return out


def file_diff(change: FileChange, label: Callable[[Path], str]) -> FileDiff:
    old = change.base.text or ""
    new = change.text or ""
    src = change.old_path or change.path
    from_label = "/dev/null" if change.kind == "create" else f"a/{label(src)}"
    to_label = "/dev/null" if change.kind == "delete" else f"b/{label(change.path)}"
    lines = _unified(old, new, from_label, to_label)
    # Counted from the hunks themselves, so the numbers always agree with the diff shown.
    insertions = sum(line.startswith("+") for line in lines[2:])
    deletions = sum(line.startswith("-") for line in lines[2:])
    text = "".join(lines) or f"--- {from_label}\n+++ {to_label}\n"  # pure rename: headers only
    return FileDiff(change.path, change.kind, text, insertions, deletions, change.old_path)


class _DiskWriter:
    """One all-or-nothing write of a list of changes, with its undo journal."""

    def __init__(self) -> None:
        self.temps: list[Path] = []
        self.made_dirs: list[Path] = []
        # (path, backup or None): undo by putting the backup back, or removing the new file.
        self.journal: list[tuple[Path, Path | None]] = []
        self.backups: list[Path] = []
        self.leftovers = WriteJournal()  # names temp and backup files before they exist

    def _sibling(self, path: Path, what: str) -> Path:
        sibling = _sibling(path, what)
        self.leftovers.record(sibling)
        return sibling

    def apply(self, changes: list[FileChange]) -> list[Path]:
        try:
            return self._apply(changes)
        finally:
            self.leftovers.close()

    def _apply(self, changes: list[FileChange]) -> list[Path]:
        writes: list[tuple[Path, bytes, int | None]] = []
        removals: list[Path] = []
        for change in changes:
            if change.text is not None:
                mode_from = change.old_path or change.path
                mode = _file_mode(mode_from) if change.base.exists else None
                writes.append((change.path, encode_text(change.text), mode))
            if change.kind == "delete":
                removals.append(change.path)
            elif change.old_path is not None:
                removals.append(change.old_path)
        check_writable([p for p, _, _ in writes], removals)
        if writes or removals:
            hide_from_git((writes[0][0] if writes else removals[0]).parent)
        current = writes[0][0] if writes else (removals[0] if removals else Path())
        try:
            staged: list[tuple[Path, Path]] = []
            for path, data, mode in writes:
                current = path
                staged.append((self._stage(path, data, mode), path))
            for tmp, path in staged:
                current = path
                backup = self._backup(path) if os.path.lexists(path) else None
                os.replace(tmp, path)
                self.temps.remove(tmp)
                self.journal.append((path, backup))
            for path in removals:
                current = path
                backup = self._sibling(path, "bak")
                os.replace(path, backup)
                self.backups.append(backup)
                self.journal.append((path, backup))
            for directory in {p.parent for p, _ in self.journal}:
                _fsync_dir(directory)
        except BaseException as exc:
            problems = self._rollback()
            raise ApplyFailed(current, exc, problems) from exc
        self._discard(self.backups)
        return [p for p, _ in self.journal]

    def _stage(self, path: Path, data: bytes, mode: int | None) -> Path:
        self._make_parents(path.parent)
        while True:
            tmp = self._sibling(path, "tmp")
            try:
                # 0o666 lets the umask decide a new file's mode, as any editor would.
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                continue
            break
        self.temps.append(tmp)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        return tmp

    def _make_parents(self, directory: Path) -> None:
        missing: list[Path] = []
        while not directory.exists():
            missing.append(directory)
            directory = directory.parent
        for d in reversed(missing):
            os.mkdir(d)
            self.made_dirs.append(d)

    def _backup(self, path: Path) -> Path:
        backup = self._sibling(path, "bak")
        try:
            os.link(path, backup)
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP):
                raise
            shutil.copy2(path, backup)
        self.backups.append(backup)
        return backup

    def _rollback(self) -> list[str]:
        problems: list[str] = []
        for path, backup in reversed(self.journal):
            try:
                if backup is not None:
                    os.replace(backup, path)
                    self.backups.remove(backup)
                else:
                    os.unlink(path)
            except OSError as exc:
                problems.append(f"{path}: {exc}")
        self._discard(self.temps)
        self._discard(self.backups)
        for directory in reversed(self.made_dirs):
            with contextlib.suppress(OSError):
                os.rmdir(directory)
        return problems

    @staticmethod
    def _discard(paths: list[Path]) -> None:
        for p in list(paths):
            with contextlib.suppress(OSError):
                os.unlink(p)
        paths.clear()


def check_writable(writes: list[Path], removals: list[Path]) -> None:
    """Refuse the whole write before the first byte when any target is read-only.

    A file without its owner's write bit counts as read-only even for root (who could
    write it anyway), as editors treat it: the person marked it so on purpose."""
    for path in [*writes, *removals]:
        if os.path.lexists(path) and not os.path.islink(path):
            mode = _file_mode(path)
            if mode is not None and (not mode & stat.S_IWUSR or not os.access(path, os.W_OK)):
                raise NotWritable(path, f"the file is read-only (mode {mode:o})")
        directory = path.parent
        while not directory.exists() and directory != directory.parent:
            directory = directory.parent
        if directory.is_dir() and not os.access(directory, os.W_OK | os.X_OK):
            raise NotWritable(path, f"the folder {directory} is not writable")


def _sibling(path: Path, what: str) -> Path:
    return leftover_name(path, what, secrets.token_hex(4))


def _file_mode(path: Path) -> int | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
