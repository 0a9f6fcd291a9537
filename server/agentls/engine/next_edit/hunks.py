"""A model's rewrite of the editable region as hunks: one per group of changed lines (one per
line where lines were replaced one for one), each cut to the characters that differ, so a
rename shows as the name and a new line as that line.

``line_hunks`` gives the changed lines only; ``trimmed`` cuts one to the characters that
differ. A suggestion needs one hunk cut (the one at or after the cursor), not all of them: a
rename that spreads over the region is one hunk per line.
"""

from __future__ import annotations

import difflib
import itertools
from typing import NamedTuple

from agentls.engine.next_edit.recent_edits import common_prefix, common_suffix


class Hunk(NamedTuple):  # a tuple: one per changed line of the region, made in a loop
    start: int  # offsets in the region
    end: int
    text: str
    lines: tuple[str, str]  # the whole lines replaced and their replacement: which hunk it is


def hunks(old: str, new: str) -> list[Hunk]:
    """The changes from ``old`` to ``new`` (both "\\n"-separated lines), one per group of
    changed lines, each cut to the characters that differ."""
    return [trimmed(old, hunk) for hunk in line_hunks(old, new)]


def line_hunks(old: str, new: str) -> list[Hunk]:
    """As ``hunks``, each hunk still its whole lines: ``start`` and ``end`` where its lines
    begin and end in ``old`` (``end`` may be ``len(old) + 1``, past the last line's missing
    line break), ``text`` the lines that replace them. Its ``lines`` are the same as the cut
    hunk's, and its ``end`` is never before the cut hunk's."""
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
            start, end = old_starts[a1], old_starts[a2]
            text = joined_new[new_starts[b1]:new_starts[b2]]
            replaced = old[start:end] if end <= len(old) else old[start:] + "\n"
            if a1 == a2:  # lines added, none replaced (not the sentinel line break)
                replaced = ""
            out.append(Hunk(start, end, text, (replaced, text)))
    return out


def trimmed(old: str, hunk: Hunk) -> Hunk:
    """A hunk of ``line_hunks(old, ...)`` cut to the characters that differ."""
    replaced, text = hunk.lines
    head = common_prefix(replaced, text)
    tail = common_suffix(replaced, text, head)
    start, end = hunk.start + head, hunk.end - tail
    text = text[head:len(text) - tail]
    if start > len(old):  # lines added after the region's last line, which has no line break
        return Hunk(len(old), len(old), "\n" + text[:-1], hunk.lines)
    if end > len(old):  # past the region's last line: the sentinel line break
        end = len(old)
        if text.endswith("\n"):
            text = text[:-1]
        elif start > 0 and old[start - 1] == "\n":
            start -= 1
    return Hunk(start, end, text, hunk.lines)
