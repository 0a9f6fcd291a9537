"""The ``AGENTS.md`` files in the sub-folders of a root (engine/instructions.py reads them).

`find` lists them in a process of its own, so the walk passes on another core: `agentls run`
starts it before it imports the engine (cli/early_start.py), and the server when it starts
its background work, like the git commands of the project facts (tools/git_prefetch.py). On
a 20,000-file tree walking in Python held the interpreter ~9 ms on the way to the first
request; `find` takes ~14 ms of the other core meanwhile. What it lists is checked against
the fence here, each folder on the way as the walk checked it (`find` reads no ignore files:
where the walk left an ignored folder out, this drops what was found in it). A listing
nobody takes within ``PREFETCH_TTL_S`` is discarded (the tree may have changed since).

Without `find` (Windows), or when it fails or takes longer than ``FIND_TIMEOUT_S``, the
folders are walked in Python, at most ``NESTED_SCAN_LIMIT`` of them.

Standard library only: imported before the engine is.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentls.tools.workspace import Workspace

log = logging.getLogger(__name__)

NAME = "AGENTS.md"
NESTED_SCAN_LIMIT = 5_000  # folders the walk in Python looks at
SKIPPED_FOLDERS = frozenset({
    "node_modules", "__pycache__", ".git", "dist", "build", "coverage", ".venv", "venv",
    ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".next", ".cache", ".agentls",
})
PREFETCH_TTL_S = 3.0
FIND_TIMEOUT_S = 2.0

_started: dict[str, tuple[float, subprocess.Popen[bytes]]] = {}
_lock = threading.Lock()


def find_command(root: Path) -> list[str]:
    """``find`` for files (or links) named AGENTS.md below ``root``, not descending into the
    skipped folders, the folders the root's .gitignore names plainly, nor linked folders;
    NUL-separated absolute paths."""
    anywhere, anchored = ignored_names(root)
    tests: list[str] = []
    for name in sorted(SKIPPED_FOLDERS | anywhere):
        tests += ["-o", "-name", name] if tests else ["-name", name]
    for rel in sorted(anchored):
        tests += ["-o", "-path", os.path.join(root, rel)]
    return ["find", str(root), "-mindepth", "1", "(", "-type", "d", "(", *tests, ")",
            "-prune", ")", "-o", "(", "-name", NAME, "!", "-type", "d", "-print0", ")"]


def ignored_names(root: Path) -> tuple[set[str], set[str]]:
    """Folders ``find`` need not enter (a build output of 100,000 files, say): the plain
    names in the root's .gitignore, as names at any depth (``target/``) and as paths from
    the root (``/out``). Only a hint: what is found is checked against the fence anyway, and
    an ignored folder cannot have anything re-included below it. A file with negations
    (``!``) gives none, as does a pattern with wildcards."""
    try:
        lines = (root / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return set(), set()
    patterns = [line.strip() for line in lines]
    if any(p.startswith("!") for p in patterns):
        return set(), set()
    anywhere: set[str] = set()
    anchored: set[str] = set()
    for pattern in patterns:
        if not pattern or pattern.startswith("#") or any(c in pattern for c in "*?[]\\"):
            continue
        name = pattern.strip("/")
        if not name or "/" in name or name in (".", ".."):
            continue
        (anchored if pattern.startswith("/") else anywhere).add(name)
    return anywhere, anchored


def start(root: Path) -> bool:
    """Start listing ``root`` now (for ``files`` to take); False where `find` cannot run."""
    process = _spawn(root)
    if process is None:
        return False
    with _lock:
        previous = _started.pop(str(root), None)
        _started[str(root)] = (time.monotonic(), process)
    if previous is not None:
        _discard(previous[1])
    return True


def files(ws: Workspace, root: Path) -> list[str]:
    """The nested AGENTS.md files of ``root`` that the fence shows, relative, shallow first
    (then by path). ``root`` is real, as ``Workspace.roots`` are."""
    listed = _listed(root)
    with ws.listing():
        found = _walk(ws, root) if listed is None else _visible(ws, root, listed)
    return sorted(found, key=lambda p: (p.count("/"), p))


def _listed(root: Path) -> list[str] | None:
    """What `find` listed (relative paths), or None: no `find`, or it failed or hung."""
    process = _take(root) or _spawn(root)
    if process is None:
        return None
    try:
        out, err = process.communicate(timeout=FIND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _discard(process)
        log.info("listing nested %s under %s took over %g s: walking the folders instead",
                 NAME, root, FIND_TIMEOUT_S)
        return None
    if process.returncode != 0 and not out:  # it could not run as asked: walk instead
        log.info("find for nested %s under %s failed (exit %s): %s", NAME, root,
                 process.returncode, err.decode(errors="replace").strip()[:300])
        return None
    # A non-zero exit with output: folders it could not read, which the walk skips too.
    prefix = str(root) + os.sep
    return [os.fsdecode(p)[len(prefix):] for p in out.split(b"\0")
            if p and os.fsdecode(p).startswith(prefix)]


def _visible(ws: Workspace, root: Path, listed: list[str]) -> list[str]:
    """The nested ones (not the root's) whose every folder on the way is visible."""
    seen: dict[str, bool] = {}

    def folder_visible(rel: str) -> bool:
        if rel not in seen:
            parent = rel.rpartition("/")[0]
            seen[rel] = (not parent or folder_visible(parent)) and ws.is_visible(root / rel)
        return seen[rel]

    return [rel for rel in listed if "/" in rel and folder_visible(rel.rpartition("/")[0])]


def _walk(ws: Workspace, root: Path) -> list[str]:
    """Walk the folders in Python, at most ``NESTED_SCAN_LIMIT``, in the order ``os.walk``
    would take them (depth first, by name)."""
    found: list[str] = []
    budget = NESTED_SCAN_LIMIT
    top = str(root)  # real (Workspace.roots), and so is every folder reached below it
    pending = [top]
    while pending:
        budget -= 1
        if budget <= 0:
            break
        folder = pending.pop()
        try:
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError:
            continue
        folders = []
        for entry in entries:
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_folder:
                if entry.name not in SKIPPED_FOLDERS and ws.is_visible_entry(folder, entry):
                    folders.append(entry.path)
            elif entry.name == NAME and folder != top:
                found.append(Path(entry.path).relative_to(root).as_posix())
        pending += sorted(folders, reverse=True)
    return found


def _spawn(root: Path) -> subprocess.Popen[bytes] | None:
    if os.name != "posix" or shutil.which("find") is None:
        return None
    try:
        return subprocess.Popen(find_command(root), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        log.info("find could not be started (%s): walking the folders instead", exc)
        return None


def _take(root: Path) -> subprocess.Popen[bytes] | None:
    with _lock:
        found = _started.pop(str(root), None)
    if found is None:
        return None
    begun, process = found
    if time.monotonic() - begun > PREFETCH_TTL_S:
        _discard(process)
        return None
    return process


def discard_all() -> None:
    """Kill and reap what nobody took (at exit; tests)."""
    with _lock:
        pending = [process for _, process in _started.values()]
        _started.clear()
    for process in pending:
        _discard(process)


def _discard(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.communicate()


atexit.register(discard_all)
