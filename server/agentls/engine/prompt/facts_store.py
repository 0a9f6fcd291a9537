"""Project facts kept across restarts: ``.agentls/cache/facts.json`` beside ``state.db``.

Gathering the facts walks the tree and runs git; after a restart with nothing changed that
work gives the same answer. The facts are stored with a fingerprint of what they were
gathered from, and reused only while it still matches:

- per root: the text of ``.git/HEAD`` and the size and mtime of the branch it names (or of
  ``packed-refs``), of ``.git/index``, of ``.gitignore``, ``.git/info/exclude`` and each
  key file (pyproject.toml, package.json, ...);
- the workspace's deny list (it decides what the listing shows);
- the mtime of every folder the tree listing looked into, taken before it was listed (a
  file added, removed or renamed there changes it).

What the fingerprint cannot see: a tracked file edited in place without touching git's
index, which would show in git's "changed files" only after the next gathering (the facts
say they may be out of date and name git_status for the current state; saved files gather
them again). A root whose ``.git`` is a file (a linked worktree) is never stored.

Why a file beside ``state.db`` and not a table in it: the editor gathers the facts right
after start-up, before any request, and must not create the store (or ``.agentls/``) then;
a JSON file is read without opening SQLite or migrating a schema, and it is written only
where ``.agentls/`` already exists, under ``cache/``, which its ``.gitignore`` keeps out of
git. Instructions (AGENTS.md, ...) are not stored: they are read fresh every time (where
the nested ones are is kept by engine/prompt/nested_agents.py).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from agentls.base import state_file
from agentls.engine.prompt.facts import (
    KEY_FILES,
    KeyFile,
    ProjectFacts,
    RootFacts,
    TreeListing,
    folder_mtime,
)
from agentls.tools.git.read import GitFacts
from agentls.workspace.fence import Workspace

log = logging.getLogger(__name__)

FORMAT = 2
STORE = Path(".agentls") / "cache" / "facts.json"


def store_path(ws: Workspace) -> Path:
    return ws.roots[0] / STORE


def load(ws: Workspace) -> ProjectFacts | None:
    """The stored facts of these roots when nothing they were gathered from has changed."""
    path = store_path(ws)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.info("stored project facts %s not used: %s", path, exc)
        return None
    try:
        if (data.get("format") != FORMAT
                or data.get("roots") != [str(r) for r in ws.roots]
                or data.get("fingerprint") != fingerprint(ws)):
            return None
        facts = _facts_from(data["facts"])
    except (KeyError, TypeError, ValueError) as exc:
        log.info("stored project facts %s not used: %s", path, exc)
        return None
    if any(folder_mtime(Path(f)) != mtime for r in facts.roots for f, mtime in r.tree.folders):
        return None
    return facts


def save(ws: Workspace, facts: ProjectFacts) -> bool:
    """Store the facts, only where ``.agentls/`` already exists; False when not stored."""
    state_dir = ws.roots[0] / STORE.parts[0]
    if not state_dir.is_dir() or any((root / ".git").is_file() for root in ws.roots):
        return False
    data = {"format": FORMAT, "roots": [str(r) for r in ws.roots],
            "fingerprint": fingerprint(ws), "facts": _facts_to(facts)}
    path = store_path(ws)
    try:
        path.parent.mkdir(exist_ok=True)
        state_file.write_json(path, data, durable=False)  # a cache: rebuilt when lost
    except OSError as exc:
        log.info("project facts not stored in %s: %s", path, exc)
        return False
    return True


def fingerprint(ws: Workspace) -> dict[str, Any]:
    """What the facts of each root were gathered from, besides the folders listed: the deny
    list too, since it decides what the tree shows."""
    return {"deny": list(ws.deny), "roots": [_root_fingerprint(root) for root in ws.roots]}


def _root_fingerprint(root: Path) -> dict[str, Any]:
    git = root / ".git"
    try:
        head = (git / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        head = None
    paths = [git / "index", root / ".gitignore", git / "info" / "exclude"]
    if head is not None and head.startswith("ref: "):
        paths += [git / head.removeprefix("ref: "), git / "packed-refs"]
    paths += [root / name for name in KEY_FILES]
    return {"head": head, "files": {str(p.relative_to(root)): _stat(p) for p in paths}}


def _stat(path: Path) -> list[int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return [found.st_mtime_ns, found.st_size]


# --- JSON form of ProjectFacts ------------------------------------------------------------------


def _facts_to(facts: ProjectFacts) -> dict[str, Any]:
    return {"platform": facts.platform, "roots": [{
        "root": str(r.root), "label": r.label, "git_error": r.git_error,
        "tree": {"lines": list(r.tree.lines), "more": r.tree.more,
                 "more_is_lower_bound": r.tree.more_is_lower_bound,
                 "folders": [list(f) for f in r.tree.folders]},
        "key_files": [{"path": k.path, "abs": str(k.abs), "title": k.title, "body": k.body,
                       "language": k.language, "complete": k.complete} for k in r.key_files],
        "git": None if r.git is None else {
            "branch": r.git.branch, "changed_files": list(r.git.changed_files),
            "ahead": r.git.ahead, "behind": r.git.behind,
            "last_commits": list(r.git.last_commits)},
    } for r in facts.roots]}


def _facts_from(data: dict[str, Any]) -> ProjectFacts:
    roots = []
    for r in data["roots"]:
        tree = r["tree"]
        git = r["git"]
        roots.append(RootFacts(
            Path(r["root"]), str(r["label"]),
            TreeListing(tuple(map(str, tree["lines"])), int(tree["more"]),
                        bool(tree["more_is_lower_bound"]),
                        tuple((str(f), int(m)) for f, m in tree["folders"])),
            tuple(KeyFile(str(k["path"]), Path(k["abs"]), str(k["title"]), str(k["body"]),
                          str(k["language"]), bool(k["complete"])) for k in r["key_files"]),
            None if git is None else GitFacts(
                git["branch"], tuple(map(str, git["changed_files"])), int(git["ahead"]),
                int(git["behind"]), tuple(map(str, git["last_commits"]))),
            r["git_error"]))
    return ProjectFacts(tuple(roots), str(data["platform"]))
