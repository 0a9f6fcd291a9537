"""Temporary and backup files of an apply that was killed midway (``.NAME.PID-HEX.agentls-tmp``,
``….agentls-bak``), the folders it created for new files, and the files it had already
replaced: hidden from ``git status`` while they exist, undone and removed on the next start.

Every apply names its temporary and backup files, each folder it is about to create
(``dir:PATH``), each file it is about to replace or remove (a JSON line: its backup and the
SHA-256 of what it writes), and at last that every change is in place, in a journal (one
small file per apply in the user state directory, ``pending-writes/PID-HEX.list``) *before*
doing it, and removes the journal when it ends, whatever the outcome. A start reads the
journals (a handful of files, whatever the size of the workspace: no walk of the tree) and,
for each whose writer is dead: unless it got to the end, undoes what it changed (all or
nothing: a replaced file comes back from its backup and a new file goes, each only while it
still holds exactly what the apply wrote; a removed file comes back while its name is free);
then removes the files it names (only ours: our suffix, that writer's pid in the name, older
than this process), then the folders it names that are empty (deepest first; one holding
anything stays), then the journal. A concurrent apply's files are left alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import time
from pathlib import Path
from typing import IO, Any

import platformdirs

log = logging.getLogger(__name__)

SUFFIXES = (".agentls-tmp", ".agentls-bak")
GIT_EXCLUDE_LINES = ("*.agentls-tmp", "*.agentls-bak")
_NAME = re.compile(r"^\..*\.(\d+)-[0-9a-f]+\.agentls-(?:tmp|bak)$")
_STARTED = time.time()
DIR_PREFIX = "dir:"  # a journal line naming a folder the apply created (paths are absolute)


def leftover_name(path: Path, what: str, token: str) -> Path:
    """The sibling a write stages through: same directory, so ``os.replace`` is a rename."""
    return path.with_name(f".{path.name[:170]}.{os.getpid()}-{token}.agentls-{what}")


def hide_from_git(start: Path) -> None:
    """Add our suffixes to the repository's ``info/exclude`` (once), so a killed apply's
    files never show in ``git status``."""
    git_dir = _git_dir(start)
    if git_dir is None:
        return
    exclude = git_dir / "info" / "exclude"
    try:
        text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        missing = [line for line in GIT_EXCLUDE_LINES if line not in text.splitlines()]
        if not missing:
            return
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with exclude.open("a", encoding="utf-8") as handle:
            if text and not text.endswith("\n"):
                handle.write("\n")
            handle.write("# AgentLS: files of an interrupted apply\n" + "\n".join(missing) + "\n")
    except OSError as exc:  # a read-only .git: git status may show them, nothing else fails
        log.info("cannot add AgentLS's temporary files to %s: %s", exclude, exc)


def journal_dir() -> Path:
    return platformdirs.user_state_path("agentls") / "pending-writes"


class WriteJournal:
    """The names an apply is about to create, written down before it creates them."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self._handle: IO[str] | None = None

    def record(self, leftover: Path) -> None:
        """Name ``leftover`` before it exists (a kill right after creating it is covered)."""
        self._write(f"{leftover}\n")

    def record_swap(self, target: Path, backup: Path | None, digest: str) -> None:
        """Before ``target`` is replaced by new content (SHA-256 ``digest``): how to undo it
        (put ``backup`` back, or remove a new file) if the apply dies midway."""
        self._write(json.dumps({"swap": str(target), "backup": backup and str(backup),
                                "sha256": digest}) + "\n")

    def record_removal(self, target: Path, backup: Path) -> None:
        """Before ``target`` is moved to ``backup`` (a deletion, or a rename's old name)."""
        self._write(json.dumps({"remove": str(target), "backup": str(backup)}) + "\n")

    def record_done(self) -> None:
        """Every change is in place: a kill from here on is no reason to undo them."""
        self._write(json.dumps({"done": True}) + "\n")

    def record_dir(self, folder: Path) -> None:
        """Name a folder the apply is about to create (removed, if empty, after a kill)."""
        self._write(f"{DIR_PREFIX}{folder}\n")

    def _write(self, line: str) -> None:
        if self._handle is None:
            directory = journal_dir()
            try:
                directory.mkdir(parents=True, exist_ok=True)
                self.path = directory / f"{os.getpid()}-{secrets.token_hex(4)}.list"
                self._handle = self.path.open("x", encoding="utf-8")
            except OSError as exc:  # no journal: leftovers of a kill stay, hidden from git
                log.info("cannot keep the write journal in %s: %s", directory, exc)
                self.path = None
                return
        self._handle.write(line)
        self._handle.flush()  # in the kernel's hands: survives a kill -9 of this process

    def close(self) -> None:
        """The apply ended (written, or rolled back): nothing of it is left to clean."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            self.path = None


def clean_stale() -> list[Path]:
    """Remove the leftovers of dead applies named in their journals; return what was removed."""
    removed: list[Path] = []
    try:
        journals = list(journal_dir().glob("*.list"))
    except OSError:
        return removed
    restored: list[Path] = []
    for journal in journals:
        pid = _journal_pid(journal)
        if pid is None or pid == os.getpid() or _alive(pid):
            continue
        try:
            named = journal.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        folders: list[Path] = []
        leftovers: list[Path] = []
        entries: list[dict[str, Any]] = []
        for line in named:
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    entry = json.loads(line)
                    if isinstance(entry, dict):
                        entries.append(entry)
                continue
            if line.startswith(DIR_PREFIX):
                folders.append(Path(line[len(DIR_PREFIX):]))
                continue
            leftovers.append(Path(line))
        if not any(entry.get("done") for entry in entries):
            restored += _undo(entries)  # before the leftovers go: the backups are in them
        for path in leftovers:
            if _is_stale(path, pid):
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(path)
        removed += _remove_empty(folders)
        with contextlib.suppress(OSError):
            journal.unlink()
    if restored:
        log.warning("undid %d change(s) of an apply killed midway (all or nothing): %s",
                    len(restored), ", ".join(str(p) for p in restored[:5]))
    if removed:
        log.info("removed %d file(s) left by an interrupted apply: %s", len(removed),
                 ", ".join(str(p) for p in removed[:5]))
    return removed


def _undo(entries: list[dict[str, Any]]) -> list[Path]:
    """Put back what a dead apply changed, newest first: a replaced file from its backup and
    a new file removed, each only while it still holds exactly what the apply wrote (a file
    changed since is left alone); a removed file from its backup while its name is free."""
    undone: list[Path] = []
    for entry in reversed(entries):
        with contextlib.suppress(OSError, TypeError, KeyError):
            if "swap" in entry:
                target = Path(entry["swap"])
                if _sha256(target) != entry["sha256"]:
                    continue  # not replaced yet, or changed since: nothing of ours to undo
                backup = entry.get("backup")
                if backup and os.path.lexists(backup):
                    os.replace(backup, target)
                elif not backup:
                    target.unlink()
                else:
                    continue
                undone.append(target)
            elif "remove" in entry:
                target, backup = Path(entry["remove"]), Path(entry["backup"])
                if os.path.lexists(backup) and not os.path.lexists(target):
                    os.replace(backup, target)
                    undone.append(target)
    return undone


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _remove_empty(folders: list[Path]) -> list[Path]:
    """The folders a dead apply created, deepest first, each if empty (``rmdir`` refuses one
    that holds anything: what is in it stays; an empty folder has nothing to lose)."""
    removed: list[Path] = []
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        try:
            if not folder.is_symlink():
                os.rmdir(folder)
        except OSError:
            continue
        if not folder.exists():
            removed.append(folder)
    return removed


def _journal_pid(journal: Path) -> int | None:
    head = journal.name.split("-", 1)[0]
    return int(head) if head.isdigit() else None


def _is_stale(path: Path, writer: int) -> bool:
    match = _NAME.match(path.name)
    if match is None or int(match.group(1)) != writer:
        return False
    try:
        return path.lstat().st_mtime <= _STARTED
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _git_dir(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():  # a worktree: info/exclude lives in the common directory
            with contextlib.suppress(OSError, ValueError):
                line = dot_git.read_text(encoding="utf-8").strip()
                git_dir = (folder / line.removeprefix("gitdir:").strip()).resolve()
                common = git_dir / "commondir"
                if common.exists():
                    return (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
                return git_dir
            return None
    return None
