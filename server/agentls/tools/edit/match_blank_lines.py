"""The last layer of edit matching: blank lines that differ between `search` and the file.

Models often drop or add a blank line between functions. This layer compares only the
non-blank lines (trailing whitespace ignored, indentation kept) and must still find exactly
one place. The replacement keeps the file's own blank lines wherever the edit left the
search's lines unchanged (a `search` missing the blank line between two functions, repeated
in `replace`, does not remove that line from the file); what the edit changes comes from
`replace` as written.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import pairwise

_MAX_STARTS = 11  # one more than the matches an ambiguity message lists


@dataclass(frozen=True)
class BlankLinesMatch:
    """The non-blank search lines' places in the file (0-based line indexes)."""

    places: tuple[int, ...]

    @property
    def first(self) -> int:
        return self.places[0]

    @property
    def last(self) -> int:
        return self.places[-1]


def _blank(line: str) -> bool:
    return not line.strip()


def find_ignoring_blank_lines(
    file_lines: Sequence[str], search_lines: Sequence[str]
) -> list[BlankLinesMatch]:
    """Every place where the search's non-blank lines follow each other in the file with only
    blank lines between them (at most one more than the listed maximum)."""
    wanted = [line.rstrip() for line in search_lines if not _blank(line)]
    if not wanted:
        return []
    nonblank = [index for index, line in enumerate(file_lines) if not _blank(line)]
    keys = [file_lines[index].rstrip() for index in nonblank]
    size = len(wanted)
    found: list[BlankLinesMatch] = []
    for position in range(len(keys) - size + 1):
        if keys[position] == wanted[0] and keys[position:position + size] == wanted:
            found.append(BlankLinesMatch(tuple(nonblank[position:position + size])))
            if len(found) >= _MAX_STARTS:
                break
    return found


def replacement_lines(
    file_lines: Sequence[str],
    search_lines: Sequence[str],
    replace_lines: Sequence[str],
    match: BlankLinesMatch,
) -> list[str]:
    """The lines that take the place of ``file_lines[match.first:match.last + 1]``."""
    nonblank = [index for index, line in enumerate(search_lines) if not _blank(line)]
    place = dict(zip(nonblank, match.places, strict=True))
    opcodes = _line_by_line(search_lines, replace_lines, SequenceMatcher(
        None, list(search_lines), list(replace_lines), autojunk=False).get_opcodes())
    kept_gaps = _kept_gaps(nonblank, opcodes)
    out: list[str] = []

    def file_gap_before(index: int) -> None:
        if index in kept_gaps:  # the file's own blank lines, where the edit changes nothing
            previous = _previous_nonblank(nonblank, index)
            assert previous is not None
            out.extend(file_lines[place[previous] + 1:place[index]])

    for tag, i1, i2, j1, j2 in opcodes:
        if tag != "equal":
            if i1 < i2 and i1 in place:
                file_gap_before(i1)
            out.extend(replace_lines[j1:j2])
            continue
        for index in range(i1, i2):
            if index in place:
                file_gap_before(index)
                out.append(file_lines[place[index]])
            elif nonblank[0] < index < nonblank[-1] and _next_nonblank(
                    nonblank, index) not in kept_gaps:
                out.append(search_lines[index])  # a gap the edit changes: as the search has it
            # else: the file's blank lines stand for it, or (leading, trailing) it is context
            # the file does not have there
    return out


_Opcode = tuple[str, int, int, int, int]


def _line_by_line(search_lines: Sequence[str], replace_lines: Sequence[str],
                  opcodes: Sequence[_Opcode]) -> list[_Opcode]:
    """A replacement of as many lines as it replaces, split into one opcode a line (a blank
    line replaced by a blank line is then kept, not changed)."""
    out: list[_Opcode] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag != "replace" or i2 - i1 != j2 - j1:
            out.append((tag, i1, i2, j1, j2))
            continue
        for offset in range(i2 - i1):
            i, j = i1 + offset, j1 + offset
            same = search_lines[i].rstrip() == replace_lines[j].rstrip()
            out.append(("equal" if same else "replace", i, i + 1, j, j + 1))
    return out


def _kept_gaps(nonblank: Sequence[int], opcodes: Sequence[_Opcode]) -> set[int]:
    """The non-blank search lines whose gap before them (back to the previous non-blank
    line) the edit leaves alone: no line inserted there, every blank line in it kept."""
    changed: set[int] = set()
    inserted_before: set[int] = set()
    for tag, i1, i2, _, _ in opcodes:
        if tag == "insert":
            inserted_before.add(i1)
        elif tag != "equal":
            changed.update(range(i1, i2))
    kept: set[int] = set()
    for previous, index in pairwise(nonblank):
        gap = range(previous + 1, index)
        if not any(i in changed for i in gap) and not any(
                i in inserted_before for i in range(previous + 1, index + 1)):
            kept.add(index)
    return kept


def _next_nonblank(nonblank: Sequence[int], index: int) -> int | None:
    at = bisect_right(nonblank, index)
    return nonblank[at] if at < len(nonblank) else None


def _previous_nonblank(nonblank: Sequence[int], index: int) -> int | None:
    at = bisect_left(nonblank, index)
    return nonblank[at - 1] if at > 0 else None
