"""The editable region around the cursor and the context around it, cut from the document
by walking lines out from the cursor (never splitting the whole text), within token budgets,
as Zeta's excerpt does: the region grows a line up and a line down in turn until its budget is
spent, the context the same around the region.
"""

from __future__ import annotations

from dataclasses import dataclass

CHARS_PER_TOKEN = 3.5


@dataclass(frozen=True)
class Excerpt:
    text: str  # the document
    start: int  # the editable region: [start, end), whole lines, end before its last "\n"
    end: int
    context_start: int  # the context: [context_start, context_end), whole lines
    context_end: int
    cursor: int

    @property
    def region(self) -> str:
        return self.text[self.start:self.end]

    @property
    def above(self) -> str:
        """The context lines above the region (each ending in its line break)."""
        return self.text[self.context_start:self.start]

    @property
    def below(self) -> str:
        """The context lines below the region (each starting with its line break)."""
        return self.text[self.end:self.context_end]

    @property
    def at_file_start(self) -> bool:
        return self.context_start == 0

    @property
    def first_line(self) -> int:
        return self.text.count("\n", 0, self.start)


def _tokens(chars: int) -> int:
    return max(1, int(chars / CHARS_PER_TOKEN))


def _line_end(text: str, offset: int) -> int:
    end = text.find("\n", offset)
    return len(text) if end < 0 else end


def _grow(text: str, start: int, end: int, budget: int) -> tuple[int, int]:
    """[start, end) (whole lines) grown a line up and a line down in turn while ``budget``
    tokens last."""
    while budget > 0:
        grew = False
        if start > 0:
            previous = text.rfind("\n", 0, start - 1) + 1
            budget -= _tokens(start - previous)
            start, grew = previous, True
        if budget > 0 and end < len(text):
            following = _line_end(text, end + 1)
            budget -= _tokens(following - end)
            end, grew = following, True
        if not grew:
            break
    return start, end


def excerpt(text: str, cursor: int, region_tokens: int, context_tokens: int) -> Excerpt:
    cursor = max(0, min(cursor, len(text)))
    line_start = text.rfind("\n", 0, cursor) + 1
    line_end = _line_end(text, cursor)
    budget = region_tokens - _tokens(line_end - line_start)
    start, end = _grow(text, line_start, line_end, budget)
    context_start, context_end = _grow(text, start, end, context_tokens)
    return Excerpt(text, start, end, context_start, context_end, cursor)
