"""Level 3 of the prompt: the project facts (file tree, key files, git state of every root),
gathered once per session. The levels are described in :mod:`agentls.engine.prompt.levels`.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agentls.engine.prompt.file_text import (
    CappedRead,
    IncludedFile,
    cut_bytes,
    fenced,
    language_of,
    read_inside,
)
from agentls.tools.git.read import GitError, GitFacts, git_facts
from agentls.workspace.fence import Workspace

TREE_DEPTH = 3
TREE_LIMIT = 200
# Entries looked at for the tree (each is a fence check): keeps the first run of a session on a
# big repository fast; beyond it the listing says "at least N more".
TREE_SCAN_LIMIT = 2_000
# Once TREE_LIMIT entries are listed, what is looked at only to be counted: "at least 500
# more" says a big tree as well as 1,800 more did, for a quarter of the fence checks (~15 ms
# of `agentls run` on 20,000 files, on the way to its first request).
TREE_COUNT_LIMIT = 500
# Folders that are noise even where no .gitignore says so (seed 002 "Project Context").
TREE_SKIPPED_FOLDERS = frozenset({
    "node_modules", "__pycache__", ".git", "dist", "build", "coverage", ".venv", "venv",
    ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".next", ".cache",
})
KEY_FILES = ("pyproject.toml", "package.json", "tsconfig.json", "Dockerfile", ".env.example")
KEY_FILE_CAP_BYTES = 2 * 1024
PACKAGE_JSON_FIELDS = ("name", "scripts", "dependencies")
# Read whole to be parsed; what is shown is still capped at KEY_FILE_CAP_BYTES.
_KEY_FILE_READ_LIMITS = {"package.json": 1024 * 1024, ".env.example": 64 * 1024}
MAX_CHANGED_FILES = 30


@dataclass(frozen=True)
class TreeListing:
    lines: tuple[str, ...]  # indented two spaces per level; folders end with "/"
    more: int  # entries counted but not listed
    more_is_lower_bound: bool = False  # the scan stopped before counting them all
    # Each folder listed, with its mtime (ns) taken before listing it: what facts_store
    # compares to reuse the listing after a restart. Not part of the listing itself.
    folders: tuple[tuple[str, int], ...] = field(default=(), compare=False, repr=False)

    def render(self) -> str:
        lines = list(self.lines) or ["(empty)"]
        if self.more:
            at_least = "at least " if self.more_is_lower_bound else ""
            lines.append(f"(... and {at_least}{self.more} more)")
        return "\n".join(lines)


@dataclass(frozen=True)
class KeyFile:
    path: str
    abs: Path
    title: str  # the heading: the path, plus what was kept when not the whole file
    body: str
    language: str
    complete: bool  # body is the whole file, unchanged


@dataclass(frozen=True)
class RootFacts:
    root: Path
    label: str
    tree: TreeListing
    key_files: tuple[KeyFile, ...]
    git: GitFacts | None  # None: not a git repository, or git failed (git_error)
    git_error: str | None = None


@dataclass(frozen=True)
class ProjectFacts:
    """Level 3, gathered once per session (``build_project_facts``)."""

    roots: tuple[RootFacts, ...]
    platform: str = ""

    def render(self) -> str:
        multi = len(self.roots) > 1
        parts = [
            "# Project facts\n"
            "Gathered when this session started and not updated during it: use list_files, "
            "read_file and git_status for the current state."
        ]
        if multi:
            named = ", ".join(f"{r.label} ({r.root})" for r in self.roots)
            head = f"Workspace roots: {named}. Write paths as '<root name>/<path>'."
        else:
            head = f"Workspace root: {self.roots[0].root}"
        if self.platform:
            head += f"\nPlatform: {self.platform}"
        parts.append(head)
        for facts in self.roots:
            parts.extend(_render_root(facts, multi))
        return "\n\n".join(parts)

    def included_files(self) -> tuple[IncludedFile, ...]:
        return tuple(
            IncludedFile(k.path, k.abs, k.body, "the project facts")
            for r in self.roots
            for k in r.key_files
            if k.complete
        )


async def build_project_facts(ws: Workspace) -> ProjectFacts:
    """File tree, key files and git state of every root (file work runs in a thread)."""
    labelled = len(ws.roots) > 1
    roots = []
    for root in ws.roots:
        label = ws.display_path(root) if labelled else ""
        files, git = await asyncio.gather(
            asyncio.to_thread(_file_facts, ws, root), _git_facts(ws, root)
        )
        tree, key_files = files
        roots.append(RootFacts(root, label, tree, key_files, *git))
    return ProjectFacts(tuple(roots), platform.system())


def _file_facts(ws: Workspace, root: Path) -> tuple[TreeListing, tuple[KeyFile, ...]]:
    with ws.listing():
        return _tree(ws, root), _key_files(ws, root)


async def _git_facts(ws: Workspace, root: Path) -> tuple[GitFacts | None, str | None]:
    try:
        return await git_facts(root, ws.is_visible), None
    except GitError as exc:
        return None, exc.message


def _render_root(facts: RootFacts, multi: bool) -> list[str]:
    h = "###" if multi else "##"
    parts = [f"## Root {facts.label} ({facts.root})"] if multi else []
    parts.append(
        f"{h} Files ({TREE_DEPTH} levels deep; ignored files left out)\n"
        + fenced(facts.tree.render(), "text")
    )
    if facts.key_files:
        blocks = [f"{h} Key files"]
        blocks += [f"{h}# {k.title}\n{fenced(k.body, k.language)}" for k in facts.key_files]
        parts.append("\n\n".join(blocks))
    parts.append(f"{h} Git\n{_render_git(facts)}")
    return parts


def _render_git(facts: RootFacts) -> str:
    git = facts.git
    if git is None:
        if facts.git_error:
            return f"git could not be read: {facts.git_error}"
        return "Not a git repository."
    prefix = f"{facts.label}/" if facts.label else ""
    lines = [f"Branch: {git.branch if git.branch is not None else '(detached HEAD)'}"]
    if git.ahead or git.behind:
        lines.append(f"Ahead of its upstream by {git.ahead}, behind by {git.behind}.")
    if git.changed_files:
        shown = [f"{c[:2]} {prefix}{c[3:]}" for c in git.changed_files[:MAX_CHANGED_FILES]]
        more = len(git.changed_files) - len(shown)
        if more:
            shown.append(f"(... and {more} more)")
        lines.append(f"Uncommitted changes ({len(git.changed_files)} files):\n"
                     + fenced("\n".join(shown), "text"))
    else:
        lines.append("No uncommitted changes.")
    if git.last_commits:
        lines.append("Last commits:\n" + fenced("\n".join(git.last_commits), "text"))
    else:
        lines.append("No commits yet.")
    return "\n".join(lines)


@dataclass
class _Node:
    name: str
    is_dir: bool
    children: list[_Node] = field(default_factory=list)


def _tree(ws: Workspace, root: Path) -> TreeListing:
    """Breadth first, so that when the limit cuts, every top-level entry is still listed."""
    top = _Node(".", True)
    level: list[tuple[Path, _Node | None]] = [(root, top)]
    listed = counted = 0
    budget = [TREE_SCAN_LIMIT]
    folders: list[tuple[str, int]] = []
    for depth in range(1, TREE_DEPTH + 1):
        deeper: list[tuple[Path, _Node | None]] = []
        for folder, node in level:
            if budget[0] > 0:
                folders.append((str(folder), folder_mtime(folder)))
            for name, is_dir, descend in _visible_entries(ws, folder, budget):
                counted += 1
                child = None
                if node is not None and listed < TREE_LIMIT:
                    child = _Node(name, is_dir)
                    node.children.append(child)
                    listed += 1
                    if listed == TREE_LIMIT:  # the rest is only counted
                        budget[0] = min(budget[0], TREE_COUNT_LIMIT)
                if descend and depth < TREE_DEPTH:
                    deeper.append((folder / name, child))
        level = deeper
    return TreeListing(tuple(_tree_lines(top, 0)), counted - listed, budget[0] <= 0,
                       tuple(folders))


def folder_mtime(folder: Path) -> int:
    """A folder's mtime in ns (changes when an entry is added, removed or renamed); -1 when
    it cannot be read."""
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return -1


def _visible_entries(
    ws: Workspace, folder: Path, budget: list[int]
) -> list[tuple[str, bool, bool]]:
    """(name, is a folder, worth descending into), folders first, then by name."""
    if budget[0] <= 0:
        return []
    try:
        with os.scandir(folder) as scan:
            entries = list(scan)
    except OSError:
        return []
    folder_real = str(folder)  # the root, or folders below it reached without symlinks
    found = []
    for entry in entries:
        if budget[0] <= 0:
            break
        budget[0] -= 1
        try:
            is_dir = entry.is_dir()
            is_link = entry.is_symlink()
        except OSError:
            continue
        if is_dir and entry.name in TREE_SKIPPED_FOLDERS:
            continue
        if not ws.is_visible_entry(folder_real, entry):
            continue
        found.append((entry.name, is_dir, is_dir and not is_link))  # a linked folder may loop
    found.sort(key=lambda e: (not e[1], e[0].casefold(), e[0]))
    return found


def _tree_lines(node: _Node, depth: int) -> Iterator[str]:
    for child in node.children:
        yield "  " * depth + child.name + ("/" if child.is_dir else "")
        yield from _tree_lines(child, depth + 1)


def _key_files(ws: Workspace, root: Path) -> tuple[KeyFile, ...]:
    found = []
    for name in KEY_FILES:
        path = root / name
        # .env.example is on the default deny list (.env.*): only its variable names are used.
        if name != ".env.example" and not ws.is_visible(path):
            continue
        limit = _KEY_FILE_READ_LIMITS.get(name, KEY_FILE_CAP_BYTES + 1)
        read = read_inside(root, path, limit)
        if read is None:
            continue
        shown = ws.display_path(path)
        if name == "package.json":
            found.append(_package_json(shown, read))
        elif name == ".env.example":
            found.append(_env_example(shown, read))
        else:
            text, cut = cut_bytes(read.data, read.size, KEY_FILE_CAP_BYTES)
            title = shown
            if cut:
                title += (f" (first {KEY_FILE_CAP_BYTES // 1024} KiB of {read.size:,} bytes; "
                          "read_file for the rest)")
            found.append(KeyFile(shown, read.real, title, text, language_of(name), not cut))
    return tuple(found)


def _package_json(shown: str, read: CappedRead) -> KeyFile:
    title = f"{shown} (name, scripts and dependencies only)"
    if read.size > len(read.data):
        return KeyFile(shown, read.real, title, f"(too large to read: {read.size:,} bytes)",
                       "text", False)
    try:
        data = json.loads(read.data.decode("utf-8", "replace"))
    except json.JSONDecodeError as exc:
        return KeyFile(shown, read.real, title, f"(not valid JSON: {exc})", "text", False)
    if not isinstance(data, dict):
        return KeyFile(shown, read.real, title, "(not a JSON object)", "text", False)
    kept = {key: data[key] for key in PACKAGE_JSON_FIELDS if key in data}
    text = json.dumps(kept, indent=2, ensure_ascii=False)
    body, cut = cut_bytes(text.encode("utf-8"), None, KEY_FILE_CAP_BYTES)
    if cut:
        title += f", cut at {KEY_FILE_CAP_BYTES // 1024} KiB"
    return KeyFile(shown, read.real, title, body, "json", False)


_ENV_NAME = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=", re.MULTILINE)


def _env_example(shown: str, read: CappedRead) -> KeyFile:
    text = read.data.decode("utf-8", "replace")
    names = list(dict.fromkeys(_ENV_NAME.findall(text)))
    body, cut = cut_bytes("\n".join(names).encode("utf-8"), None, KEY_FILE_CAP_BYTES)
    if cut or read.size > len(read.data):
        body += "\n(... and more)"
    body = body or "(no variables)"
    return KeyFile(shown, read.real, f"{shown} (variable names only)", body, "text", False)
