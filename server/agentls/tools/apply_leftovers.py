"""Temporary and backup files of an apply that was killed midway (``.NAME.PID-HEX.agentls-tmp``,
``….agentls-bak``): hidden from ``git status`` while they exist, removed on the next start.

Only files with our suffix whose writer (the pid in the name) is no longer alive, and that are
older than this process, are removed: a concurrent apply's files are left alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from pathlib import Path

log = logging.getLogger(__name__)

SUFFIXES = (".agentls-tmp", ".agentls-bak")
GIT_EXCLUDE_LINES = ("*.agentls-tmp", "*.agentls-bak")
_NAME = re.compile(r"^\..*\.(\d+)-[0-9a-f]+\.agentls-(?:tmp|bak)$")
_SKIP_DIRS = frozenset({".git", ".agentls", "node_modules", ".venv", "__pycache__"})
_STARTED = time.time()


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


def clean_stale(root: Path) -> list[Path]:
    """Remove leftovers of dead applies under ``root``; return what was removed."""
    removed: list[Path] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
        for name in files:
            if not name.endswith(SUFFIXES):
                continue
            path = Path(directory) / name
            if _is_stale(path):
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(path)
    if removed:
        log.info("removed %d file(s) left by an interrupted apply: %s", len(removed),
                 ", ".join(str(p) for p in removed[:5]))
    return removed


def _is_stale(path: Path) -> bool:
    match = _NAME.match(path.name)
    if match is None:
        return False
    pid = int(match.group(1))
    if pid == os.getpid() or _alive(pid):
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
