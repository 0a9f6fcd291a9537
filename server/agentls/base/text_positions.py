"""LSP positions and text offsets, both ways, in the client's position encoding (utf-8,
utf-16 or utf-32 code units): the one place this arithmetic lives. ``LineStarts`` finds the
offset of a position as a document is typed into (inline completion and next edits ask at
every keystroke); ``Positions`` finds the position of an offset in a text whose edits are
being planned (``lsp/services/edits.py``). No AgentLS imports: any layer may use it.
"""

from __future__ import annotations

import itertools
import operator
import re
from bisect import bisect_right

ENCODINGS = ("utf-8", "utf-16", "utf-32")
_BREAK = re.compile(r"\r\n|\r|\n")


class LineStarts:
    """Where a document's lines start, kept from one version to the next. Typing changes
    the text after the cursor line's start, so the start found for the last version holds
    while the text before it is unchanged (one C-level comparison); otherwise the lines are
    found again (``str.split``, also C-level). Lines end at "\\n" (a "\\r\\n" ends the same
    line), as in LSP."""

    def __init__(self) -> None:
        self._text: str | None = None
        self._line = 0
        self._start = 0
        self._indexed: str | None = None  # the text _starts was made for
        self._starts: list[int] | None = None  # its every line's start

    def offset(self, text: str, line: int, character: int, encoding: str) -> int:
        """The offset of an LSP position (clamped: past the last line or past the end of its
        line means its end), ``character`` counted in ``encoding`` units."""
        start = self.line_start(text, line)
        if start is None:
            return len(text)
        end = text.find("\n", start)
        content = text[start:end if end >= 0 else len(text)].rstrip("\r")
        return start + code_points(content, character, encoding)

    def line_start(self, text: str, line: int) -> int | None:
        """The offset where ``line`` starts; None past the last line."""
        if line < 0:
            return 0
        if text is self._indexed and self._starts is not None:
            return self._starts[line] if line < len(self._starts) else None
        kept = self._text
        if kept is not None and self._line <= line <= self._line + 64 and (
                text is kept or text.startswith(kept[:self._start])):
            return self._walk(text, self._line, self._start, line)  # lines above: unchanged
        lengths = map(operator.add, map(len, text.split("\n")), itertools.repeat(1))
        starts = [0, *itertools.accumulate(lengths)]  # C-level all the way (5,000 lines: ~0.2 ms)
        starts.pop()  # the start after the last line's end
        self._indexed, self._starts = text, starts
        if line >= len(starts):
            return None
        self._text, self._line, self._start = text, line, starts[line]
        return starts[line]

    def _walk(self, text: str, line: int, start: int, target: int) -> int | None:
        while line < target:
            newline = text.find("\n", start)
            if newline < 0:
                return None
            line, start = line + 1, newline + 1
        self._text, self._line, self._start = text, line, start
        return start


def code_points(line: str, units: int, encoding: str) -> int:
    """How many characters of ``line`` make ``units`` code units of ``encoding``."""
    if units <= 0:
        return 0
    if encoding == "utf-32" or line.isascii():
        return min(units, len(line))
    size = 2 if encoding == "utf-16" else 1
    counted = 0
    for index, char in enumerate(line):
        counted += (2 if ord(char) > 0xFFFF else 1) if size == 2 else len(char.encode())
        if counted >= units:
            return index + 1 if counted == units else index
    return len(line)


def units_of(text: str, encoding: str) -> int:
    """The length of ``text`` in ``encoding`` code units."""
    if encoding == "utf-32" or text.isascii():
        return len(text)
    if encoding == "utf-16":
        return len(text.encode("utf-16-le", "surrogatepass")) // 2
    return len(text.encode("utf-8", "surrogatepass"))


class Positions:
    """Offsets in one text (Python str indices) to LSP positions (line, character) in one
    encoding. Lines end at "\n", "\r\n" or a lone "\r", as LSP says."""

    def __init__(self, text: str, encoding: str) -> None:
        self.text = text
        self.encoding = encoding
        self.line_starts = [0, *(m.end() for m in _BREAK.finditer(text))]

    def at(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self.line_starts, offset) - 1
        start = self.line_starts[line]
        return line, units_of(self.text[start:offset], self.encoding)
