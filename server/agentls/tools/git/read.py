"""Read-only git tools: git_status, git_diff, git_log, and the git facts of the project prompt.

Every call runs `git -C <root> --no-pager` without colour, pager, prompts or optional locks,
and with external diff and textconv drivers off (a repository's config must not run
programs through us). Paths go through the workspace fence: files it hides are left out
of status and diff.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentls.tools.git.runner import GIT_TIMEOUT_SECONDS as GIT_TIMEOUT_SECONDS
from agentls.tools.git.runner import GitError as GitError
from agentls.tools.git.runner import run_git as _run_git
from agentls.tools.output import fail, ok
from agentls.workspace.fence import FenceError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agentls.workspace.fence import Workspace

MAX_LOG_ENTRIES = 50
MAX_STATUS_ENTRIES = 300


@dataclass(frozen=True)
class GitFacts:
    """What the project-facts prompt level says about git."""

    branch: str | None
    """None when HEAD is detached."""
    changed_files: tuple[str, ...]
    """Paths relative to the root, with their two-letter status (`" M src/a.py"`)."""
    ahead: int
    behind: int
    last_commits: tuple[str, ...]
    """One line each: short hash, date, author, subject."""


async def git_status(ws: Workspace) -> dict[str, Any]:
    """Branch, upstream, ahead/behind and the changed files of every root that is a repo."""
    sections: list[dict[str, Any]] = []
    try:
        for root in _repo_roots(ws, await _repositories(ws.roots)):
            status = await _read_status(root)
            sections.append(_render_status(ws, root, status))
    except GitError as exc:
        return fail(exc.code, exc.message)
    if not sections:
        return _not_a_repo(ws.roots)
    if len(sections) == 1:
        return ok(**sections[0])
    return ok(roots=sections)


async def git_diff(ws: Workspace, path: str | None = None, staged: bool = False) -> dict[str, Any]:
    """The unstaged changes (or with ``staged`` the staged ones) of tracked files."""
    try:
        targets = _diff_targets(ws, path)
        repos = await _repositories([root for root, _ in targets])
        results = []
        for root, pathspec in targets:
            if root in repos:
                results.append(await _diff_one(ws, root, pathspec, staged))
    except FenceError as exc:
        return fail(exc.code, exc.message)
    except GitError as exc:
        return fail(exc.code, exc.message)
    if not results:
        return _not_a_repo([root for root, _ in targets])
    files = [entry for result in results for entry in result["files"]]
    diff = "".join(result["diff"] for result in results)
    data: dict[str, Any] = {"staged": staged, "files": files, "diff": diff}
    hidden = sum(result["hidden"] for result in results)
    if hidden:
        data["hidden"] = hidden
    if not files:
        data["message"] = await _empty_diff_hint(ws, targets, repos, staged, hidden)
    return ok(**data)


async def git_log(ws: Workspace, n: int = 5) -> dict[str, Any]:
    """The last ``n`` commits (1..50) touching the workspace, one line each."""
    count = min(max(int(n), 1), MAX_LOG_ENTRIES)
    try:
        repos = _repo_roots(ws, await _repositories(ws.roots))
        if not repos:
            return _not_a_repo(ws.roots)
        logs = {ws.display_path(root): await _read_log(root, count) for root in repos}
    except GitError as exc:
        return fail(exc.code, exc.message)
    data: dict[str, Any] = {"n": count}
    if count != n:
        data["notes"] = [f"n={n} is outside 1..{MAX_LOG_ENTRIES}; showing {count}"]
    if len(logs) == 1:
        data["commits"] = next(iter(logs.values()))
        if not data["commits"]:
            data["message"] = "The repository has no commits yet."
    else:
        data["roots"] = [{"root": root, "commits": commits} for root, commits in logs.items()]
    return ok(**data)


async def git_facts(
    root: Path, visible: Callable[[Path], bool] | None = None
) -> GitFacts | None:
    """Git state of one root for the project facts, or None when it is not a repository.

    ``visible`` (usually ``Workspace.is_visible``) leaves out changed files the fence hides.
    """
    if root not in await _repositories([root]):
        return None
    status = await _read_status(root)
    changed = [
        f"{entry.code} {entry.rel}"
        for entry in status.entries
        if visible is None or visible(entry.abs)
    ]
    return GitFacts(
        branch=status.branch,
        changed_files=tuple(changed),
        ahead=status.ahead,
        behind=status.behind,
        last_commits=tuple(await _read_log(root, 5)),
    )


async def _repositories(roots: Sequence[Path]) -> set[Path]:
    """The roots that are inside a git work tree."""
    found = set()
    for root in roots:
        code, out, _ = await _run_git(root, "rev-parse", "--is-inside-work-tree", check=False)
        if code == 0 and out.strip() == "true":
            found.add(root)
    return found


def _repo_roots(ws: Workspace, repos: set[Path]) -> list[Path]:
    return [root for root in ws.roots if root in repos]


def _not_a_repo(roots: Sequence[Path]) -> dict[str, Any]:
    where = ", ".join(str(root) for root in roots)
    return fail(
        "NOT_A_GIT_REPO",
        f"The workspace ({where}) is not a git repository, so there is no git status, diff "
        "or log. Use list_files and read_file to look at the files instead.",
    )


# --- status -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    code: str
    """Two letters as in `git status --short`: index, work tree (`" M"`, `"A "`, `"??"`)."""
    rel: str
    abs: Path
    orig_rel: str | None = None
    orig_abs: Path | None = None


@dataclass
class _Status:
    branch: str | None = None
    upstream: str | None = None
    ahead: int = 0
    behind: int = 0
    initial: bool = False
    entries: list[_Entry] = field(default_factory=list)


async def _read_status(root: Path, pathspec: str = ".") -> _Status:
    _, top, _ = await _run_git(root, "rev-parse", "--show-toplevel")
    toplevel = Path(top.strip())
    resolved_root = root.resolve()
    _, out, _ = await _run_git(
        root, "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal", "--",
        pathspec,
    )
    status = _Status()
    records = out.split("\0")
    index = 0
    while index < len(records):
        record = records[index]
        index += 1
        if record.startswith("# "):
            _read_header(record[2:], status)
            continue
        kind, _, rest = record.partition(" ")
        orig: str | None = None
        if kind == "1":
            code, path = rest[:2], rest.split(" ", 7)[-1]
        elif kind == "2":
            code, path = rest[:2], rest.split(" ", 8)[-1]
            orig = records[index]
            index += 1
        elif kind == "u":
            code, path = rest[:2], rest.split(" ", 9)[-1]
        elif kind == "?":
            code, path = "??", rest
        else:
            continue
        abs_path = toplevel / path
        entry = _Entry(
            code=code.replace(".", " "),
            rel=_relative(abs_path, resolved_root),
            abs=abs_path,
            orig_rel=_relative(toplevel / orig, resolved_root) if orig else None,
            orig_abs=toplevel / orig if orig else None,
        )
        status.entries.append(entry)
    return status


def _read_header(header: str, status: _Status) -> None:
    key, _, value = header.partition(" ")
    if key == "branch.head":
        status.branch = None if value == "(detached)" else value
    elif key == "branch.oid":
        status.initial = value == "(initial)"
    elif key == "branch.upstream":
        status.upstream = value
    elif key == "branch.ab":
        ahead, _, behind = value.partition(" ")
        status.ahead, status.behind = abs(int(ahead)), abs(int(behind))


def _relative(abs_path: Path, root: Path) -> str:
    try:
        return abs_path.relative_to(root).as_posix()
    except ValueError:
        return abs_path.as_posix()


def _render_status(ws: Workspace, root: Path, status: _Status) -> dict[str, Any]:
    changes: list[str] = []
    hidden = 0
    for entry in status.entries:
        # The fence hides a path if the path or where it was renamed from is hidden.
        if not ws.is_visible(entry.abs) or (entry.orig_abs and not ws.is_visible(entry.orig_abs)):
            hidden += 1
            continue
        shown = ws.display_path(entry.abs)
        if entry.orig_abs is not None:
            shown = f"{ws.display_path(entry.orig_abs)} -> {shown}"
        changes.append(f"{entry.code} {shown}")
    data: dict[str, Any] = {
        "root": ws.display_path(root),
        "branch": status.branch if status.branch is not None else "(detached HEAD)",
        "upstream": status.upstream,
        "ahead": status.ahead,
        "behind": status.behind,
        "clean": not status.entries,
        "changes": changes[:MAX_STATUS_ENTRIES],
    }
    if status.initial:
        data["notes"] = ["no commits yet"]
    if len(changes) > MAX_STATUS_ENTRIES:
        data["changes"].append(f"(... and {len(changes) - MAX_STATUS_ENTRIES} more)")
    if hidden:
        data["hidden"] = hidden
    return data


# --- diff -------------------------------------------------------------------------------


def _diff_targets(ws: Workspace, path: str | None) -> list[tuple[Path, str]]:
    """(root, pathspec relative to the root) pairs to diff."""
    if path is None or path.strip() in ("", "."):
        return [(root, ".") for root in ws.roots]
    target = ws.resolve(path)
    return [(target.root, target.rel if target.rel not in ("", ".") else ".")]


def parse_name_status(output: str) -> list[tuple[str, list[str]]]:
    """``git diff --name-status -z`` as (status letter, paths): renames and copies carry two."""
    entries: list[tuple[str, list[str]]] = []
    fields = output.split("\0")
    index = 0
    while index < len(fields) - 1:
        letter = fields[index][:1]
        paths = fields[index + 1 : index + (3 if letter in "RC" else 2)]
        index += 1 + len(paths)
        entries.append((letter, paths))
    return entries


async def _diff_one(ws: Workspace, root: Path, pathspec: str, staged: bool) -> dict[str, Any]:
    cached = ("--cached",) if staged else ()
    _, names, _ = await _run_git(
        root, "diff", *cached, "--relative", "--name-status", "-z", "--", pathspec
    )
    files: list[str] = []
    visible: list[str] = []
    hidden = 0
    for letter, paths in parse_name_status(names):
        if not all(ws.is_visible(root / rel) for rel in paths):
            hidden += 1
            continue
        visible.extend(paths)
        shown = [ws.display_path(root / rel) for rel in paths]
        files.append(f"{letter} {' -> '.join(shown)}")
    diff = ""
    if visible:
        # List the files only when the fence hid some: otherwise the pathspec is enough.
        spec = visible if hidden else [pathspec]
        _, diff, _ = await _run_git(
            root, "diff", *cached, "--relative", "--no-color", "--no-ext-diff",
            "--no-textconv", "--", *spec,
        )
    return {"files": files, "diff": diff, "hidden": hidden}


async def _empty_diff_hint(
    ws: Workspace, targets: list[tuple[Path, str]], repos: set[Path], staged: bool, hidden: int
) -> str:
    if hidden:
        return "The only changes are in files the workspace hides."
    if staged:
        return "No staged changes. Call git_diff without staged to see unstaged changes."
    staged_count = untracked = 0
    for root, pathspec in targets:
        if root not in repos:
            continue
        status = await _read_status(root, pathspec)
        with ws.listing():
            entries = [e for e in status.entries if ws.is_visible(e.abs)]
        staged_count += sum(1 for e in entries if e.code[0] not in " ?")
        untracked += sum(1 for e in entries if e.code == "??")
    hints = ["No unstaged changes."]
    if staged_count:
        hints.append(f"{staged_count} file(s) have staged changes: call git_diff with staged.")
    if untracked:
        hints.append(f"{untracked} untracked path(s) are not in diffs: see git_status.")
    return " ".join(hints)


# --- log --------------------------------------------------------------------------------


async def _read_log(root: Path, count: int) -> list[str]:
    code, out, err = await _run_git(
        root, "log", f"-n{count}", "--no-color", "--date=short",
        "--format=%h %ad %an: %s", "--", ".", check=False,
    )
    if code != 0:
        if "does not have any commits" in err:
            return []
        raise GitError("GIT_FAILED", f"git log failed: {err or f'exit code {code}'}")
    return [line for line in out.splitlines() if line]
