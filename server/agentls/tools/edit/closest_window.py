"""When an edit's search text is not in the file: the run of file lines most similar to it
(difflib, with a cheap prefilter on long files), shown to the model as numbered lines so its
next attempt can copy the real text."""

from __future__ import annotations

import difflib
import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from agentls.tools.edit.match_folds import fold_punctuation

_MAX_SHOWN_LINES = 40


_MAX_SHOWN_LINE_CHARS = 200


# Above this many windows, difflib only scores the windows a cheap line/word score ranks best.
_MAX_DIFFLIB_WINDOWS = 200


_PREFILTERED_WINDOWS = 40


_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class ClosestWindow:
    """The lines of a file most similar to a block that was not found."""

    start_line: int
    lines: tuple[str, ...]
    similarity: float

    @property
    def end_line(self) -> int:
        return self.start_line + len(self.lines) - 1


def closest_window(file_lines: Sequence[str], pattern: Sequence[str]) -> ClosestWindow | None:
    """The run of ``len(pattern)`` file lines most similar to ``pattern`` (difflib ratio)."""
    if not file_lines or not pattern:
        return None
    size = min(len(pattern), len(file_lines))
    starts: Sequence[int] = range(len(file_lines) - size + 1)
    if len(starts) > _MAX_DIFFLIB_WINDOWS:
        starts = _promising_windows(file_lines, pattern, size)
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2("\n".join(_loose(line) for line in pattern))
    scored: list[tuple[float, int]] = []
    for start in starts:
        matcher.set_seq1("\n".join(_loose(line) for line in file_lines[start : start + size]))
        scored.append((matcher.quick_ratio(), start))
    # quick_ratio bounds ratio from above, so stop once no remaining window can win.
    scored.sort(key=lambda item: (-item[0], item[1]))
    best_ratio, best_start = -1.0, 0
    for bound, start in scored:
        if bound < best_ratio:
            break
        matcher.set_seq1("\n".join(_loose(line) for line in file_lines[start : start + size]))
        ratio = matcher.ratio()
        if ratio > best_ratio or (ratio == best_ratio and start < best_start):
            best_ratio, best_start = ratio, start
    return ClosestWindow(
        best_start + 1, tuple(file_lines[best_start : best_start + size]), best_ratio
    )


def format_closest(window: ClosestWindow) -> str:
    """The window as numbered lines, introduced by its line range and similarity."""
    shown = window.lines[:_MAX_SHOWN_LINES]
    width = len(str(window.start_line + len(shown) - 1))
    body = "\n".join(
        f"{window.start_line + offset:>{width}} | {_shorten(line)}"
        for offset, line in enumerate(shown)
    )
    more = len(window.lines) - len(shown)
    if more:
        body += f"\n... ({more} more lines)"
    span = (
        f"line {window.start_line}"
        if window.start_line == window.end_line
        else f"lines {window.start_line}-{window.end_line}"
    )
    return f"The closest text in the file is {span} ({window.similarity:.0%} similar):\n{body}"


def _promising_windows(file_lines: Sequence[str], pattern: Sequence[str], size: int) -> list[int]:
    """Window starts ranked by a cheap score: whole lines found in the pattern, then words."""
    pattern_lines = {_loose(line) for line in pattern} - {""}
    pattern_words = set(_WORD.findall(" ".join(pattern)))
    scores = []
    for line in file_lines:
        loose = _loose(line)
        if loose in pattern_lines:
            scores.append(2.0)
            continue
        words = set(_WORD.findall(loose))
        scores.append(len(words & pattern_words) / len(words) if words else 0.0)
    totals = [0.0, *accumulate(scores)]
    window_scores = (
        (totals[start + size] - totals[start], -start)
        for start in range(len(file_lines) - size + 1)
    )
    best = heapq.nlargest(_PREFILTERED_WINDOWS, window_scores)
    return sorted(-negated for _, negated in best)


def _loose(line: str) -> str:
    return " ".join(fold_punctuation(line).split())


def _shorten(line: str) -> str:
    if len(line) <= _MAX_SHOWN_LINE_CHARS:
        return line
    return line[:_MAX_SHOWN_LINE_CHARS] + " ..."
