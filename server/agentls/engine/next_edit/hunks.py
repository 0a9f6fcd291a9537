"""A model's rewrite of the editable region as hunks: one per group of changed lines (one per
line where lines were replaced one for one), each cut to the characters that differ, so a
rename shows as the name and a new line as that line.
"""

from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass

from agentls.engine.next_edit.recent_edits import common_prefix, common_suffix


@dataclass(frozen=True)
class Hunk:
    start: int  # offsets in the region
    end: int
    text: str
    lines: tuple[str, str]  # the whole lines replaced and their replacement: which hunk it is



def hunks(old: str, new: str) -> list[Hunk]:
    """The changes from ``old`` to ``new`` (both "\\n"-separated lines), one per group of
    changed lines, each cut to the characters that differ."""
    if old == new:
        return []
    old_lines = [line + "\n" for line in (old + "\n").split("\n")[:-1]]
    new_lines = [line + "\n" for line in (new + "\n").split("\n")[:-1]]
    old_starts = [0, *itertools.accumulate(map(len, old_lines))]
    new_starts = [0, *itertools.accumulate(map(len, new_lines))]
    joined_new = "".join(new_lines)
    out: list[Hunk] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:  # line for line: one hunk per line
            pairs = [(i, i + 1, j, j + 1) for i, j in zip(range(i1, i2), range(j1, j2),
                                                         strict=True)
                     if old_lines[i] != new_lines[j]]
        else:
            pairs = [(i1, i2, j1, j2)]
        for a1, a2, b1, b2 in pairs:
            out.append(_hunk(old, old_starts[a1], old_starts[a2],
                             joined_new[new_starts[b1]:new_starts[b2]]))
    return out

    return out


def _hunk(old: str, start: int, end: int, text: str) -> Hunk:
    """Lines [start, end) of ``old`` replaced by ``text``, cut to the characters that
    differ."""
    replaced = old[start:end] if end <= len(old) else old[start:] + "\n"
    lines = (replaced, text)
    head = common_prefix(replaced, text)
    tail = common_suffix(replaced, text, head)
    start, end = start + head, end - tail
    text = text[head:len(text) - tail]
    if end > len(old):  # past the region's last line: the sentinel line break
        end = len(old)
        if text.endswith("\n"):
            text = text[:-1]
        elif start > 0 and old[start - 1] == "\n":
            start -= 1
    return Hunk(start, end, text, lines)
