"""Where the nested ``AGENTS.md`` files are: a walk of the folders that remembers itself.

Every session's instructions name the ``AGENTS.md`` files in a root's sub-folders
(engine/prompt/instructions.py). Finding them walks up to ``NESTED_SCAN_LIMIT`` folders: ~10 ms on a
20,000-file repository, on the way to the first request of every `agentls run` (it was the
longest of the facts gathered then). Between two runs most folders have not changed, so the
walk is kept, in memory and in ``.agentls/cache/nested_agents.json`` where ``.agentls/``
exists: per folder its mtime, the sub-folders it led to, whether it holds an ``AGENTS.md``
and which ignore files. The next walk looks into a folder again only when its mtime changed
(an entry was added, removed or renamed there) and takes the rest as it was: the same
answer as a full walk, for one ``stat`` per folder.

What the walk may enter is the fence's to say (the deny list, ``.gitignore`` files, the
root's ``.agentlsignore``), so the kept walk is dropped whole when the deny list differs or
an ignore file it saw was changed, added or removed. A folder changed less than
``RECENT_S`` before a walk is looked into again by the next one whatever its mtime says (a
second change within the file system's timestamp granularity would not move it). The text
of an ``AGENTS.md`` is never kept: it is read fresh for every session.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentls.base import state_file
from agentls.workspace.fence import Workspace
from agentls.workspace.fence_rules import AGENTLSIGNORE, GITIGNORE

log = logging.getLogger(__name__)

AGENTS_FILE = "AGENTS.md"
NESTED_SCAN_LIMIT = 5_000  # folders looked at for nested AGENTS.md files
SKIPPED_FOLDERS = frozenset({
    "node_modules", "__pycache__", ".git", "dist", "build", "coverage", ".venv", "venv",
    ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".next", ".cache", ".agentls",
})
IGNORE_FILES = frozenset({GITIGNORE, AGENTLSIGNORE})
RECENT_S = 2.0  # a folder changed this close to a walk is looked into again next time
FORMAT = 1
STORE = Path(".agentls") / "cache" / "nested_agents.json"
UNTRUSTED = -2  # the mtime kept for a folder changed just before the walk: never equal


@dataclass(frozen=True)
class _Folder:
    mtime: int
    folders: tuple[str, ...]  # names of the sub-folders the walk enters, sorted
    agents: bool  # holds an AGENTS.md
    ignores: tuple[str, ...]  # names of the ignore files in it, sorted


@dataclass
class _Walk:
    deny: tuple[str, ...]
    folders: dict[str, _Folder] = field(default_factory=dict)  # by absolute path
    ignore_files: dict[str, list[int] | None] = field(default_factory=dict)  # path: signature


class _Restart(Exception):
    """An ignore file appeared or went away during an incremental walk: walk again, whole."""


_kept: dict[str, _Walk] = {}
_lock = threading.Lock()


def nested_agents_files(ws: Workspace, root: Path) -> list[str]:
    """``AGENTS.md`` files in the sub-folders of ``root`` (relative paths, shallow first),
    skipping ignored, noise and linked folders; bounded so a huge repository does not slow a
    session's start. Call it inside ``ws.listing()``."""
    top = str(root)  # real (Workspace.roots), and so is every folder reached below it
    with _lock:
        kept = _kept.get(top)
    if kept is None:
        kept = _load(root)
    if kept is not None and not _still_valid(kept, ws):
        kept = None
    try:
        found, walk, changed = _walk(ws, top, kept)
    except _Restart:
        found, walk, changed = _walk(ws, top, None)
    with _lock:
        _kept[top] = walk
    if changed:
        _save(root, walk)
    return sorted(found, key=lambda p: (p.count("/"), p))


def forget() -> None:
    """Drop the walks kept in memory (the stored ones stay)."""
    with _lock:
        _kept.clear()


def _still_valid(kept: _Walk, ws: Workspace) -> bool:
    return kept.deny == tuple(ws.deny) and all(
        _signature(path) == signature for path, signature in kept.ignore_files.items())


def _walk(ws: Workspace, top: str, kept: _Walk | None) -> tuple[list[str], _Walk, bool]:
    """Folders in the order ``os.walk`` would take them (depth first, by name), looking into
    a folder only when the kept walk has nothing for its mtime; also answers whether anything
    differs from the kept walk."""
    started = time.time()
    walk = _Walk(tuple(ws.deny))
    found: list[str] = []
    changed = kept is None
    budget = NESTED_SCAN_LIMIT
    pending = [top]
    while pending:
        budget -= 1
        if budget <= 0:
            break
        folder = pending.pop()
        before = kept.folders.get(folder) if kept is not None else None
        mtime = _mtime(folder)
        if before is not None and before.mtime == mtime:
            record = before
        else:
            scanned = _scan(ws, folder, top, mtime, started)
            if scanned is None:
                continue
            record = scanned
            changed = changed or record != before
            if before is not None and before.ignores != record.ignores:
                raise _Restart
        walk.folders[folder] = record
        for name in record.ignores:
            path = os.path.join(folder, name)
            if record is before and kept is not None and path in kept.ignore_files:
                walk.ignore_files[path] = kept.ignore_files[path]
            else:
                walk.ignore_files[path] = _signature(path)
        if record.agents and folder != top:
            found.append(Path(folder, AGENTS_FILE).relative_to(top).as_posix())
        pending += [os.path.join(folder, name) for name in reversed(record.folders)]
    if kept is not None and walk.folders.keys() != kept.folders.keys():
        changed = True
    return found, walk, changed


def _scan(ws: Workspace, folder: str, top: str, mtime: int, started: float) -> _Folder | None:
    try:
        with os.scandir(folder) as scan:
            entries = list(scan)
    except OSError:
        return None
    folders: list[str] = []
    agents = False
    ignores: list[str] = []
    for entry in entries:
        try:
            is_folder = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if is_folder:
            if entry.name not in SKIPPED_FOLDERS and ws.is_visible_entry(folder, entry):
                folders.append(entry.name)
        elif entry.name == AGENTS_FILE and folder != top:
            agents = True
        elif entry.name in IGNORE_FILES:
            ignores.append(entry.name)
    if mtime < 0 or mtime / 1e9 > started - RECENT_S:
        mtime = UNTRUSTED
    return _Folder(mtime, tuple(sorted(folders)), agents, tuple(sorted(ignores)))


def _mtime(folder: str) -> int:
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return -1


def _signature(path: str) -> list[int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return [found.st_mtime_ns, found.st_size, found.st_ino]


# --- kept on disk ---------------------------------------------------------------------------


def _load(root: Path) -> _Walk | None:
    path = root / STORE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.info("the kept walk %s is not used: %s", path, exc)
        return None
    try:
        if data["format"] != FORMAT or data["root"] != str(root):
            return None
        return _Walk(
            tuple(data["deny"]),
            {folder: _Folder(int(mtime), tuple(folders), bool(agents), tuple(ignores))
             for folder, (mtime, folders, agents, ignores) in data["folders"].items()},
            {file: (list(signature) if signature is not None else None)
             for file, signature in data["ignore_files"].items()})
    except (KeyError, TypeError, ValueError) as exc:
        log.info("the kept walk %s is not used: %s", path, exc)
        return None


def _save(root: Path, walk: _Walk) -> None:
    """Kept only where ``.agentls/`` already exists (the walk creates nothing else)."""
    if not (root / STORE.parts[0]).is_dir():
        return
    path = root / STORE
    data: dict[str, Any] = {
        "format": FORMAT, "root": str(root), "deny": list(walk.deny),
        "folders": {folder: [r.mtime, list(r.folders), r.agents, list(r.ignores)]
                    for folder, r in walk.folders.items()},
        "ignore_files": walk.ignore_files}
    try:
        path.parent.mkdir(exist_ok=True)
        state_file.write_json(path, data, durable=False, separators=(",", ":"))  # a cache
    except OSError as exc:
        log.info("the walk is not kept in %s: %s", path, exc)
