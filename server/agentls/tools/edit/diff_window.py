"""A unified diff that costs what the change costs, not what the file costs.

``difflib`` compares every line of both texts: 10,000 lines are tens of milliseconds, for an
edit of one line. The lines both texts share at the start and at the end are found first
(string comparisons in C), cut off, and only the window between them is diffed; the hunk
headers then get the cut lines added back, so the output reads as the whole file's diff.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator

# The line breaks str.splitlines knows besides "\n": where any is present, lines are counted
# with splitlines itself so the numbers agree with it.
_OTHER_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
MARGIN_LINES = 8
_HUNK = re.compile(r"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@$")


def unified_diff(before: str, after: str, from_label: str, to_label: str, *, n: int = 3
                 ) -> Iterator[str]:
    """``difflib.unified_diff(before.splitlines(), after.splitlines(), ..., n=n,
    lineterm="")``, computed on the changed window only."""
    head = _common_prefix(before, after)
    tail = _common_suffix(before, after, min(len(before), len(after)) - head)
    # Whole lines, with a margin beyond the ``n`` lines of context: where lines repeat, the
    # diff of the window may place a change differently from the whole file's diff (an
    # equally true diff); the margin leaves it room to do so with its full context.
    margin = n + MARGIN_LINES
    start = _line_start(before, head, margin)
    end_before = _line_end(before, len(before) - tail, margin)
    end_after = _line_end(after, len(after) - tail, margin)
    if start == 0 and end_before == len(before) and end_after == len(after):
        yield from difflib.unified_diff(before.splitlines(), after.splitlines(), from_label,
                                        to_label, n=n, lineterm="")
        return
    offset = _count_lines(before, start)
    window = difflib.unified_diff(before[start:end_before].splitlines(),
                                  after[start:end_after].splitlines(), from_label, to_label,
                                  n=n, lineterm="")
    for line in window:
        match = _HUNK.match(line) if line.startswith("@@") else None
        if match is None:
            yield line
        else:
            old, old_size, new, new_size = match.groups()
            yield f"@@ -{int(old) + offset}{old_size} +{int(new) + offset}{new_size} @@"


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix (halving the unknown part each time)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit``."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid:len(a) - lo] == b[len(b) - mid:len(b) - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _line_start(text: str, index: int, back: int) -> int:
    """The start of the line holding ``index``, moved ``back`` more lines up."""
    start = text.rfind("\n", 0, index) + 1
    for _ in range(back):
        if start == 0:
            break
        start = text.rfind("\n", 0, start - 1) + 1
    return start


def _line_end(text: str, index: int, forward: int) -> int:
    """Just after the newline ending the line holding ``index``, ``forward`` more lines on."""
    end = index
    for _ in range(forward + 1):
        newline = text.find("\n", end)
        if newline < 0:
            return len(text)
        end = newline + 1
    return end


def _count_lines(text: str, end: int) -> int:
    """The lines (as splitlines counts them) of ``text[:end]``, which ends with a newline."""
    if all(text.find(other, 0, end) < 0 for other in _OTHER_BREAKS):
        return text.count("\n", 0, end)
    return len(text[:end].splitlines())
