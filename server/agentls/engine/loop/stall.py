"""No-progress detection for ``agentls loop`` (seed 001, RG-013).

A loop makes no progress when its last ``limit`` iterations all changed nothing and each
one's output is *nearly identical* to the one before. Nearly identical means a
``difflib.SequenceMatcher`` ratio of at least 0.95 between the two outputs' token lists,
where text is first normalised (lower-cased, digit runs replaced by ``0`` so counters and
timings such as "attempt 3" or "took 41 ms" are not progress) and then split into words and
single punctuation marks. Outputs longer than 2,000 tokens are compared on their first and
last 1,000 tokens, which keeps the check fast (difflib is quadratic) while any real change of
direction still shows. A limit of 1 behaves like 2: one output alone cannot repeat anything.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections import deque
from dataclasses import dataclass

SIMILARITY_THRESHOLD = 0.95
EDGE_TOKENS = 1_000

_TOKEN = re.compile(r"\w+|[^\w\s]")
_DIGITS = re.compile(r"\d+")


def tokens(text: str) -> list[str]:
    """The normalised tokens two outputs are compared on."""
    found = _TOKEN.findall(_DIGITS.sub("0", text.lower()))
    if len(found) > 2 * EDGE_TOKENS:
        return found[:EDGE_TOKENS] + found[-EDGE_TOKENS:]
    return found


def similarity(a: str, b: str) -> float:
    """How alike two outputs are, from 0 to 1 (1: the same after normalising)."""
    left, right = tokens(a), tokens(b)
    if left == right:
        return 1.0
    return difflib.SequenceMatcher(None, left, right, autojunk=False).ratio()


def nearly_identical(a: str, b: str, threshold: float = SIMILARITY_THRESHOLD) -> bool:
    left, right = tokens(a), tokens(b)
    if left == right:
        return True
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    # Cheap upper bounds first: most outputs that differ are rejected without the full ratio.
    return (matcher.real_quick_ratio() >= threshold and matcher.quick_ratio() >= threshold
            and matcher.ratio() >= threshold)


@dataclass(frozen=True)
class _Iteration:
    text: str
    changed: bool


class ProgressTracker:
    """Feed it each iteration's output and whether it changed files; it says when to stop."""

    def __init__(self, limit: int, threshold: float = SIMILARITY_THRESHOLD) -> None:
        self.limit = max(2, limit)
        self.threshold = threshold
        self._recent: deque[_Iteration] = deque(maxlen=self.limit)

    def observe(self, text: str, *, changed: bool) -> bool:
        """Record one iteration; True when the last ``limit`` ones show no progress."""
        self._recent.append(_Iteration(text, changed))
        if len(self._recent) < self.limit or any(i.changed for i in self._recent):
            return False
        items = list(self._recent)
        return all(nearly_identical(a.text, b.text, self.threshold)
                   for a, b in itertools.pairwise(items))
