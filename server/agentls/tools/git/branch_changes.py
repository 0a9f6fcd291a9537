"""What a commit message or a pull-request description is written from: the staged diff, or a
branch's commits and diff against its base.

git runs the way ``agentls.tools.git.read`` runs it (no pager, colour, prompts, external diff or
textconv drivers). Files the workspace fence hides (``visible`` says no) are left out of the
diff and counted, so secrets never reach the model. Problems raise ``GitError`` with a
message for the person: what is wrong and what to do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentls.tools.git.read import GitError, parse_name_status
from agentls.tools.git.runner import run_git as _run_git

BASE_CANDIDATES = ("origin/HEAD", "origin/main", "origin/master", "main", "master")
MAX_COMMITS = 100
_DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv")

Visible = Callable[[Path], bool]


@dataclass(frozen=True)
class Changes:
    """A diff restricted to visible files."""

    root: Path  # the repository's top level
    files: tuple[str, ...]  # "M src/a.py", "R old.py -> new.py"
    paths: tuple[str, ...]  # visible changed paths, relative to the top level
    stat: str
    diff: str
    hidden: int  # changed files left out because the fence hides them


@dataclass(frozen=True)
class BranchChanges:
    branch: str
    base: str  # the ref the base was found from, e.g. "origin/main"
    merge_base: str  # commit id
    commits: tuple[str, ...]  # "abc1234 subject", oldest first
    changes: Changes


async def toplevel(root: Path) -> Path:
    """The top level of the repository ``root`` lies in; GitError when it is not in one."""
    code, out, _ = await _run_git(root, "rev-parse", "--show-toplevel", check=False)
    if code != 0 or not out.strip():
        raise GitError("NOT_A_GIT_REPO", f"{root} is not inside a git repository: run "
                       "`git init` there, or open the repository's folder.")
    return Path(out.strip())


async def staged_changes(root: Path, visible: Visible | None = None) -> Changes:
    """The staged changes (``git diff --cached``) of the repository at ``root``."""
    top = await toplevel(root)
    changes = await _changes(top, ("--cached",), visible)
    if not changes.files:
        if changes.hidden:
            raise GitError("NOTHING_STAGED", f"The only staged changes in {top} are in files "
                           "AgentLS hides (ignored, denied or secret files); nothing to send.")
        raise GitError("NOTHING_STAGED", f"Nothing is staged in {top}: stage the changes to "
                       "commit first (`git add <files>`), then ask again.")
    return changes


async def branch_changes(root: Path, visible: Visible | None = None,
                         base: str | None = None) -> BranchChanges:
    """The current branch's commits and diff since it left its base branch.

    The base is ``base`` when given, else the first of ``BASE_CANDIDATES`` that exists and
    that HEAD has commits beyond (so on ``main`` itself, ``origin/main`` is the base).
    """
    top = await toplevel(root)
    head = await _rev(top, "HEAD")
    if head is None:
        raise GitError("NO_COMMITS", f"The repository {top} has no commits yet: commit your "
                       "work on a branch first.")
    _, name, _ = await _run_git(top, "rev-parse", "--abbrev-ref", "HEAD")
    branch = name.strip() if name.strip() != "HEAD" else f"(detached at {head[:12]})"
    found = await _find_base(top, head, (base,) if base else BASE_CANDIDATES, given=bool(base))
    ref, merge_base = found
    _, log, _ = await _run_git(top, "log", "--no-color", "--reverse", f"-n{MAX_COMMITS}",
                               "--format=%h %s", f"{merge_base}..HEAD")
    commits = tuple(line for line in log.splitlines() if line.strip())
    changes = await _changes(top, (merge_base, "HEAD"), visible)
    if not changes.files and not commits:
        raise GitError("NO_CHANGES", f"{branch} has no changes against {ref}; nothing to "
                       "describe.")
    return BranchChanges(branch, ref, merge_base, commits, changes)


async def _find_base(top: Path, head: str, candidates: Sequence[str],
                     *, given: bool) -> tuple[str, str]:
    existing = []
    for ref in candidates:
        if await _rev(top, ref) is None:
            continue
        existing.append(ref)
        code, out, _ = await _run_git(top, "merge-base", "HEAD", ref, check=False)
        merge_base = out.strip()
        if code == 0 and merge_base and (given or merge_base != head):
            return ref, merge_base
    if given and not existing:
        raise GitError("NO_BASE", f"There is no branch or commit {candidates[0]!r} in {top}.")
    if given:
        raise GitError("NO_BASE", f"HEAD and {candidates[0]} have no common history.")
    if existing:
        raise GitError("NO_CHANGES", f"HEAD has no commits beyond {', '.join(existing)}: "
                       "commit your work on a branch first, or pass the base to compare with.")
    raise GitError("NO_BASE", f"Could not find the base branch in {top}: none of "
                   f"{', '.join(BASE_CANDIDATES)} exists. Pass the base to compare with "
                   "(e.g. {\"base\": \"develop\"}).")


async def _rev(top: Path, ref: str) -> str | None:
    code, out, _ = await _run_git(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}",
                                  check=False)
    return out.strip() if code == 0 and out.strip() else None


async def _changes(top: Path, spec: Sequence[str], visible: Visible | None) -> Changes:
    _, names, _ = await _run_git(top, "diff", *spec, "--name-status", "-z", "--")
    files: list[str] = []
    paths: list[str] = []
    hidden = 0
    for letter, entry in parse_name_status(names):
        if visible is not None and not all(visible(top / rel) for rel in entry):
            hidden += 1
            continue
        paths.extend(entry)
        files.append(f"{letter} {' -> '.join(entry)}")
    if not paths:
        return Changes(top, (), (), "", "", hidden)
    # Name the files only when the fence hid some: otherwise the whole diff is wanted.
    only = tuple(paths) if hidden else ()
    _, stat, _ = await _run_git(top, "diff", *spec, "--stat=100", *_DIFF_OPTIONS, "--", *only)
    _, diff, _ = await _run_git(top, "diff", *spec, *_DIFF_OPTIONS, "--", *only)
    return Changes(top, tuple(files), tuple(paths), stat, diff, hidden)
