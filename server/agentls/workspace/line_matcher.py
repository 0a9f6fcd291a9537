"""difflib's SequenceMatcher with the same matching blocks, fast on long files with many changes.

difflib finds the longest match in the whole window, then recurses left and right of it; each
``find_longest_match`` scans its window again, so 2,000 blocks of equal length in 20,000 lines
(an agent's edit of every tenth line) cost 2,000 scans of a shrinking window: seconds. Here a
window's candidates are the ends of its runs of equal lines along diagonals (the pairs
difflib's scan counts, popular lines left out as it does), kept in a heap ordered as that scan
would prefer them (longer, then ending first in a, then in b). The larger child window takes
its parent's heap and clips a run to its borders only when the run comes to the top; the
smaller child starts afresh, so the work is the file's size times a logarithm, not times the
number of blocks. A fresh window is answered by difflib's own scan (cheaper when the splits
are balanced, as for changes at random lines) until splits in a row leave nearly all of it on
one side; then it builds a heap. Each block is widened over equal lines as difflib does.
"""

from __future__ import annotations

import difflib
import heapq
from collections.abc import Sequence

# A run's end as the heap orders it: (-length, its last index in a, its last index in b).
_Run = tuple[int, int, int]
_Window = tuple[int, int, int, int]
# Windows up to this many lines of a, with no heap from their parent, are scanned by difflib.
_SCAN_LIMIT = 64
# A heap is built after this many splits in a row that leave 7/8 of the window on one side.
_LOPSIDED_SPLITS = 4


class LineMatcher(difflib.SequenceMatcher[str]):
    """``difflib.SequenceMatcher(None, a, b, autojunk)`` for lists of lines: the same matching
    blocks (hence opcodes), found in O(n log n) for many small changes."""

    # Set by difflib.SequenceMatcher; typeshed does not declare them.
    a: Sequence[str]
    b: Sequence[str]
    b2j: dict[str, list[int]]
    matching_blocks: list[difflib.Match] | None

    def __init__(self, a: Sequence[str], b: Sequence[str], autojunk: bool = True) -> None:
        super().__init__(None, a, b, autojunk)

    def get_matching_blocks(self) -> list[difflib.Match]:
        if self.matching_blocks is not None:
            return self.matching_blocks
        la, lb = len(self.a), len(self.b)
        blocks: list[tuple[int, int, int]] = []
        # A window comes with its parent's heap, or none: then difflib's own scan answers it,
        # unless its ancestors' splits were lopsided (the chain of scans that makes difflib
        # slow), when it builds a heap for itself and its larger parts.
        queue: list[tuple[_Window, list[_Run] | None, int]] = [((0, la, 0, lb), None, 0)]
        while queue:
            window, runs, lopsided = queue.pop()
            alo, ahi, blo, bhi = window
            if runs is None and lopsided >= _LOPSIDED_SPLITS and ahi - alo > _SCAN_LIMIT:
                runs = self._runs(window)
            if runs is None:
                i, j, k = self.find_longest_match(alo, ahi, blo, bhi)
            else:
                i, j, k = self._widen(window, *_longest(runs, window))
            if not k:
                continue
            blocks.append((i, j, k))
            parts = [(size, part) for size, part in (
                ((i - alo) + (j - blo), (alo, i, blo, j)),
                ((ahi - i - k) + (bhi - j - k), (i + k, ahi, j + k, bhi)))
                if part[0] < part[1] and part[2] < part[3]]
            if not parts:
                continue
            parts.sort(key=lambda p: p[0])  # the larger (right on a tie) last
            for _, part in parts[:-1]:
                queue.append((part, None, 0))
            size, larger = parts[-1]
            if runs is not None:
                queue.append((larger, runs, 0))
            elif 8 * size > 7 * ((ahi - alo) + (bhi - blo)):
                queue.append((larger, None, lopsided + 1))
            else:
                queue.append((larger, None, 0))
        blocks.sort()
        # Adjacent blocks merged, as difflib does.
        i1 = j1 = k1 = 0
        merged: list[tuple[int, int, int]] = []
        for i2, j2, k2 in blocks:
            if i1 + k1 == i2 and j1 + k1 == j2:
                k1 += k2
            else:
                if k1:
                    merged.append((i1, j1, k1))
                i1, j1, k1 = i2, j2, k2
        if k1:
            merged.append((i1, j1, k1))
        merged.append((la, lb, 0))
        found = [difflib.Match._make(m) for m in merged]
        self.matching_blocks = found
        return found

    def _runs(self, window: _Window) -> list[_Run]:
        """The runs of pairs (a[i] == b[j], not popular) inside the window, as a heap."""
        alo, ahi, blo, bhi = window
        a, b2j = self.a, self.b2j
        nothing: list[int] = []
        out: list[_Run] = []
        prev: dict[int, int] = {}
        for i in range(alo, ahi):
            row: dict[int, int] = {}
            for j in b2j.get(a[i], nothing):
                if j < blo:
                    continue
                if j >= bhi:
                    break
                row[j] = prev.pop(j - 1, 0) + 1
            out.extend((-k, i - 1, j) for j, k in prev.items())
            prev = row
        out.extend((-k, ahi - 1, j) for j, k in prev.items())
        heapq.heapify(out)
        return out

    def _widen(self, window: _Window, besti: int, bestj: int, bestsize: int) -> _Run:
        """difflib's widening of a match over equal lines (popular ones; there is no junk)."""
        alo, ahi, blo, bhi = window
        a, b = self.a, self.b
        while besti > alo and bestj > blo and a[besti - 1] == b[bestj - 1]:
            besti, bestj, bestsize = besti - 1, bestj - 1, bestsize + 1
        while (besti + bestsize < ahi and bestj + bestsize < bhi
               and a[besti + bestsize] == b[bestj + bestsize]):
            bestsize += 1
        return besti, bestj, bestsize


def _longest(runs: list[_Run], window: _Window) -> _Run:
    """The match difflib's scan finds first in the window: (i, j, size), or (alo, blo, 0)."""
    alo, ahi, blo, bhi = window
    while runs:
        neg, end_i, end_j = runs[0]
        start_i, shift = end_i + neg + 1, end_j - end_i
        lo, hi = max(start_i, alo, blo - shift), min(end_i, ahi - 1, bhi - 1 - shift)
        if lo > hi:
            heapq.heappop(runs)  # outside this window (and so outside its parts)
        elif lo == start_i and hi == end_i:
            heapq.heappop(runs)
            return start_i, start_i + shift, -neg
        else:
            heapq.heapreplace(runs, (lo - hi - 1, hi, hi + shift))
    return alo, blo, 0
