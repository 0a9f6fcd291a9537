"""Line diffs of a ChangeSet: lines as LSP counts them, fast opcodes for long files, and the
unified diff (with its insertion and deletion counts) a person reads."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from pathlib import Path

from agentls.workspace.change_model import FileChange, FileDiff
from agentls.workspace.line_matcher import LineMatcher

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def split_lines(text: str) -> list[str]:
    """Lines with their endings kept; only \\n, \\r\\n and \\r end a line (as in LSP)."""
    return _LINE.findall(text)


Opcode = tuple[str, int, int, int, int]

# Regions up to this many line pairs are re-matched without autojunk (quadratic-ish cost).
_REFINE_LIMIT = 250_000


def line_opcodes(a: list[str], b: list[str]) -> list[Opcode]:
    """difflib opcodes between two line lists, fast on long files and precise where it counts.

    The common head and tail are matched first (an agent edit usually touches a few lines of a
    long file). The middle is matched with autojunk, which is fast but cannot anchor on
    frequent lines (blank, "}"); each changed region it leaves is then re-matched without
    autojunk when small, or line by line when both sides have the same length.
    """
    n = min(len(a), len(b))
    head = 0
    while head < n and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < n - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    ops: list[Opcode] = []
    if head:
        ops.append(("equal", 0, head, 0, head))
    a_end, b_end = len(a) - tail, len(b) - tail
    if head < a_end or head < b_end:
        matcher = LineMatcher(a[head:a_end], b[head:b_end])
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            i1, i2, j1, j2 = i1 + head, i2 + head, j1 + head, j2 + head
            if tag == "replace":
                ops.extend(_refine(a, b, i1, i2, j1, j2))
            else:
                ops.append((tag, i1, i2, j1, j2))
    if tail:
        ops.append(("equal", a_end, len(a), b_end, len(b)))
    return ops


def _refine(a: list[str], b: list[str], i1: int, i2: int, j1: int, j2: int) -> list[Opcode]:
    if (i2 - i1) * (j2 - j1) <= _REFINE_LIMIT:
        matcher = LineMatcher(a[i1:i2], b[j1:j2], autojunk=False)
        return [
            (t, x1 + i1, x2 + i1, y1 + j1, y2 + j1) for t, x1, x2, y1, y2 in matcher.get_opcodes()
        ]
    if i2 - i1 != j2 - j1:
        return [("replace", i1, i2, j1, j2)]
    ops: list[Opcode] = []
    for k in range(i2 - i1):
        tag = "equal" if a[i1 + k] == b[j1 + k] else "replace"
        if ops and ops[-1][0] == tag:
            _, x1, _, y1, _ = ops[-1]
            ops[-1] = (tag, x1, i1 + k + 1, y1, j1 + k + 1)
        else:
            ops.append((tag, i1 + k, i1 + k + 1, j1 + k, j1 + k + 1))
    return ops


def _unified(old: str, new: str, from_label: str, to_label: str) -> list[str]:
    a, b = split_lines(old), split_lines(new)
    out: list[str] = []
    for line in difflib.unified_diff(a, b, from_label, to_label, lineterm="\n"):
        if line.endswith(("\n", "\r")):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return out


def file_diff(change: FileChange, label: Callable[[Path], str]) -> FileDiff:
    old = change.base.text or ""
    new = change.text or ""
    src = change.old_path or change.path
    from_label = "/dev/null" if change.kind == "create" else f"a/{label(src)}"
    to_label = "/dev/null" if change.kind == "delete" else f"b/{label(change.path)}"
    lines = _unified(old, new, from_label, to_label)
    # Counted from the hunks themselves, so the numbers always agree with the diff shown.
    insertions = sum(line.startswith("+") for line in lines[2:])
    deletions = sum(line.startswith("-") for line in lines[2:])
    text = "".join(lines) or f"--- {from_label}\n+++ {to_label}\n"  # pure rename: headers only
    return FileDiff(change.path, change.kind, text, insertions, deletions, change.old_path)
