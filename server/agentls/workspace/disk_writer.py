"""Writing a ChangeSet to disk, all or nothing: every target checked writable first, each new
content staged beside its target and fsynced, swapped in with ``os.replace``, hard-link
backups to restore from on any failure; temp and backup names, and the folders made for new
files, journalled (``apply_leftovers``) so a kill midway is cleaned up at the next start."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import shutil
import stat
from pathlib import Path

from agentls.workspace.apply_leftovers import WriteJournal, hide_from_git, leftover_name
from agentls.workspace.change_model import ApplyFailed, FileChange, NotWritable, encode_text


class DiskWriter:
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
            staged: list[tuple[Path, Path, str]] = []
            for path, data, mode in writes:
                current = path
                staged.append((self._stage(path, data, mode), path,
                               hashlib.sha256(data).hexdigest()))
            for tmp, path, digest in staged:
                current = path
                backup = self._backup(path) if os.path.lexists(path) else None
                self.leftovers.record_swap(path, backup, digest)  # a kill from here is undone
                os.replace(tmp, path)
                self.temps.remove(tmp)
                self.journal.append((path, backup))
            for path in removals:
                current = path
                backup = self._sibling(path, "bak")
                self.leftovers.record_removal(path, backup)
                os.replace(path, backup)
                self.backups.append(backup)
                self.journal.append((path, backup))
            for directory in {p.parent for p, _ in self.journal}:
                _fsync_dir(directory)
        except BaseException as exc:
            problems = self._rollback()
            raise ApplyFailed(current, exc, problems) from exc
        self.leftovers.record_done()  # all in place: a kill now leaves only backups to clean
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
            self.leftovers.record_dir(d)  # before it exists: a kill right after is covered
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
