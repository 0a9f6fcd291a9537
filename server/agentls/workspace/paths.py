"""The fence's vocabulary (DESIGN.md decision 2): a path that passed it (``WorkspacePath``),
the refusal a tool reports (``FenceError`` and its stable codes, with messages written for
the model: what failed and what to do next), the roots as the fence holds them, and the
path arithmetic the fence and the overlay share (``inside``, ``rel``). ``fence.py`` does
the resolving and the reading; nothing here touches a ChangeSet."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agentls.workspace.fence_rules import Refusal

FenceCode = Literal[
    "OUTSIDE_WORKSPACE",
    "IGNORED",
    "DENIED",
    "INVALID_PATH",
    "NOT_A_FILE",
    "NOT_FOUND",
    "IS_A_DIRECTORY",
    "ALREADY_EXISTS",
]

WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:(/|$)")


class FenceError(Exception):
    """A path the fence refuses, or a file the overlay cannot give.

    ``code`` is stable (tools put it in ``error``); ``message`` is written for the model:
    what failed and what to do next.
    """

    def __init__(self, code: FenceCode, message: str) -> None:
        super().__init__(message)
        self.code: str = code
        self.message = message


@dataclass(frozen=True)
class WorkspacePath:
    root: Path  # the (resolved) root it lies under
    abs: Path  # absolute normalised path, symlinks resolved
    rel: str  # posix path relative to root, "." for the root itself
    # The root's name when the workspace has several roots, else "" (not part of equality).
    root_label: str = field(default="", compare=False)

    @property
    def display(self) -> str:
        """How the model should see and write this path."""
        if not self.root_label:
            return self.rel
        return self.root_label if self.rel == "." else f"{self.root_label}/{self.rel}"


@dataclass(frozen=True)
class Root:
    """One workspace root as the fence holds it."""

    path: str  # resolved
    label: str
    aliases: tuple[str, ...]  # spellings of the root lexical paths may start with
    fold_case: bool  # the filesystem ignores case, so gitignore matching does too


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


def rel(path: str, root: str) -> str:
    if path == root:
        return "."
    relative = path[len(root) :].lstrip(os.sep)
    return relative.replace(os.sep, "/") if os.sep != "/" else relative


def fs_ignores_case(root: str) -> bool:
    swapped = root.swapcase()
    if swapped == root:
        return False
    try:
        return os.path.samefile(root, swapped)
    except OSError:
        return False


def is_special(mode: int) -> bool:
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


# --- the refusals, worded for the model -----------------------------------------------------


def outside(original: str, roots: Sequence[Root]) -> FenceError:
    shown = ", ".join(r.path for r in roots)
    return FenceError(
        "OUTSIDE_WORKSPACE",
        f"{original!r} is outside the workspace (root: {shown}). Use a path relative to "
        f"the workspace root, e.g. 'src/main.py'; '..' cannot leave the root.",
    )


def refused(original: str, refusal: Refusal) -> FenceError:
    if refusal.code == "DENIED":
        return FenceError(
            "DENIED",
            f"{original!r} is refused by the deny list (pattern {refusal.pattern!r}): it "
            f"may hold secrets or tool state. Do not try other spellings of this path; "
            f"continue without it, or ask the user for what you need from it.",
        )
    return FenceError(
        "IGNORED",
        f"{original!r} is excluded by {refusal.source} (pattern {refusal.pattern!r}), so "
        f"it is outside what you may read or change. Work on the files that are not "
        f"ignored (build outputs usually have sources); ask the user if you need it.",
    )


def not_found(wp: WorkspacePath, roots: Sequence[Root]) -> FenceError:
    hint = "Use list_files to see what exists, or search_text to find it."
    first = wp.rel.split("/", 1)[0]
    if len(roots) == 1 and first == roots[0].label and wp.rel != first:
        hint = (
            f"Paths are relative to the workspace root, which is already "
            f"{first!r}: try {wp.rel.split('/', 1)[1]!r}."
        )
    return FenceError("NOT_FOUND", f"{wp.display!r} does not exist. {hint}")


def is_a_directory(wp: WorkspacePath) -> FenceError:
    return FenceError(
        "IS_A_DIRECTORY",
        f"{wp.display!r} is a folder, not a file. Use list_files to see what it holds.",
    )
