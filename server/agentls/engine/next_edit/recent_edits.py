"""Each document's recent edits, kept as diffs from the text the editor sends (``didChange``).

Keystrokes close together are one edit: a change within ``NEAR_LINES`` of the edit being
typed, less than ``PAUSE_S`` after the last, joins it; anything else closes it and starts
another. A closed edit is the line diff between the text where it began and where it ended,
found by trimming the common start and end (C-level comparisons, a few per keystroke: the
whole text is never diffed line by line). Each document keeps at most ``MAX_EDITS``; the
prompt takes the newest that fit its budget. Nothing here is written anywhere.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

MAX_EDITS = 8  # closed edits kept per document
MAX_DOCUMENTS = 64  # documents with history; the least recently edited are forgotten
NEAR_LINES = 2
PAUSE_S = 2.0
CONTEXT_LINES = 2  # unchanged lines shown around a diff's change
MAX_DIFF_LINES = 40  # a bigger change (a paste, a reformat) is cut in its diff
CHUNK = 4096


@dataclass(frozen=True)
class Edit:
    """One edit as the model reads it: a unified diff hunk of a file."""

    path: str
    diff: str  # "@@ -a,b +c,d @@" and its lines
    first_line: int  # 0-based, in the text after the edit
    at: float  # time.monotonic() when it ended


def common_prefix(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share at the start (compared a chunk at a time)."""
    limit = min(len(a), len(b))
    start = 0
    while start < limit:
        end = min(limit, start + CHUNK)
        if a[start:end] == b[start:end]:
            start = end
            continue
        low, high = start, end  # the first difference is in [start, end)
        while high - low > 1:
            middle = (low + high) // 2
            if a[low:middle] == b[low:middle]:
                low = middle
            else:
                high = middle
        return low
    return limit


def common_suffix(a: str, b: str, floor: int) -> int:
    """How many characters ``a`` and ``b`` share at the end, not reaching into the first
    ``floor`` characters of either."""
    limit = min(len(a), len(b)) - floor
    done = 0
    while done < limit:
        size = min(CHUNK, limit - done)
        if a[len(a) - done - size:len(a) - done] == b[len(b) - done - size:len(b) - done]:
            done += size
            continue
        low, high = done, done + size  # shared length is in [low, high)
        while high - low > 1:
            middle = (low + high) // 2
            if a[len(a) - middle:len(a) - low] == b[len(b) - middle:len(b) - low]:
                low = middle
            else:
                high = middle
        return low
    return max(0, limit)


def line_diff(path: str, old: str, new: str) -> tuple[str, int] | None:
    """The changed lines between ``old`` and ``new`` as one unified diff hunk with a little
    context, and the first changed line (0-based, in ``new``); None when nothing changed."""
    if old is new or old == new:
        return None
    head = common_prefix(old, new)
    tail = common_suffix(old, new, head)
    start = old.rfind("\n", 0, head) + 1  # the changed lines start at a line start
    old_end = old.find("\n", len(old) - tail)
    new_end = new.find("\n", len(new) - tail)
    old_end = len(old) if old_end < 0 else old_end
    new_end = len(new) if new_end < 0 else new_end
    first = old.count("\n", 0, start)
    before_start = start
    for _ in range(CONTEXT_LINES):  # the context lines, found without copying the text
        if before_start == 0:
            break
        before_start = old.rfind("\n", 0, before_start - 1) + 1
    before = old[before_start:start].split("\n")[:-1]
    after_end = old_end
    for _ in range(CONTEXT_LINES):
        if after_end >= len(old):
            break
        following = old.find("\n", after_end + 1)
        after_end = len(old) if following < 0 else following
    after = old[old_end + 1:after_end].split("\n") if after_end > old_end else []
    removed = old[start:old_end].split("\n")
    added = new[start:new_end].split("\n")
    if old[start:old_end] == "" and len(old) == start:
        removed = []
    if new[start:new_end] == "" and len(new) == start:
        added = []
    lines = [f" {line}" for line in before]
    lines += _cut([f"-{line}" for line in removed])
    lines += _cut([f"+{line}" for line in added])
    lines += [f" {line}" for line in after]
    old_count = len(before) + len(removed) + len(after)
    new_count = len(before) + len(added) + len(after)
    old_start = first - len(before) + 1
    header = f"@@ -{old_start},{old_count} +{old_start},{new_count} @@"
    return header + "\n" + "\n".join(lines), first


def _cut(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_DIFF_LINES:
        return lines
    half = MAX_DIFF_LINES // 2
    return [*lines[:half], f"{lines[0][0]}... ({len(lines) - 2 * half} lines)", *lines[-half:]]


@dataclass
class _Typing:
    """The edit being typed: the text before it began, the lines it touched so far."""

    base: str
    low: int
    high: int
    last: float


class DocumentHistory:
    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.edits: deque[Edit] = deque(maxlen=MAX_EDITS)
        self._typing: _Typing | None = None

    def changed(self, text: str, lines: Iterable[tuple[int, int]], now: float) -> None:
        """The document is now ``text``; ``lines`` are the spans the change touched (in the
        new text; empty: not known, as for a whole-document change)."""
        spans = list(lines)
        if not spans:
            found = line_diff(self.path, self.text, text)
            if found is None:
                return
            first = found[1]
            spans = [(first, first + found[0].count("\n+"))]
        low = min(s for s, _ in spans)
        high = max(e for _, e in spans)
        typing = self._typing
        if typing is not None and (now - typing.last > PAUSE_S or low > typing.high + NEAR_LINES
                                   or high < typing.low - NEAR_LINES):
            self._close(self.text, typing.last)
            typing = None
        if typing is None:
            self._typing = _Typing(self.text, low, high, now)
        else:
            typing.low, typing.high, typing.last = min(typing.low, low), max(typing.high,
                                                                               high), now
        self.text = text

    def _close(self, text: str, at: float) -> None:
        typing = self._typing
        self._typing = None
        if typing is None:
            return
        found = line_diff(self.path, typing.base, text)
        if found is not None:
            self.edits.append(Edit(self.path, found[0], found[1], at))

    def recent(self) -> list[Edit]:
        """The closed edits and the one being typed, oldest first."""
        out = list(self.edits)
        typing = self._typing
        if typing is not None:
            found = line_diff(self.path, typing.base, self.text)
            if found is not None:
                out.append(Edit(self.path, found[0], found[1], typing.last))
        return out


class EditHistory:
    """Every open document's recent edits."""

    def __init__(self) -> None:
        self._documents: dict[str, DocumentHistory] = {}

    def opened(self, uri: str, path: str, text: str) -> None:
        if uri not in self._documents:
            self._documents[uri] = DocumentHistory(path, text)
            if len(self._documents) > MAX_DOCUMENTS:
                oldest = min(self._documents, key=lambda u: self._last(self._documents[u]))
                del self._documents[oldest]
        else:
            self._documents[uri].text = text

    @staticmethod
    def _last(document: DocumentHistory) -> float:
        if document._typing is not None:
            return document._typing.last
        return document.edits[-1].at if document.edits else 0.0

    def changed(self, uri: str, path: str, text: str, lines: Iterable[tuple[int, int]] = (),
                now: float | None = None) -> None:
        document = self._documents.get(uri)
        if document is None:
            self.opened(uri, path, text)
            return
        document.changed(text, lines, time.monotonic() if now is None else now)

    def closed(self, uri: str) -> None:
        self._documents.pop(uri, None)

    def text(self, uri: str) -> str | None:
        document = self._documents.get(uri)
        return document.text if document is not None else None

    def recent(self, uri: str, others: int = 2) -> list[Edit]:
        """This document's recent edits and the newest ones of ``others`` other documents,
        oldest first (the last is the newest edit of this document)."""
        own = self._documents.get(uri)
        mine = own.recent() if own is not None else []
        elsewhere: list[Edit] = []
        for other_uri, document in self._documents.items():
            if other_uri != uri and (document.edits or document._typing is not None):
                elsewhere.extend(document.recent()[-2:])
        elsewhere.sort(key=lambda e: e.at)
        return [*elsewhere[-others * 2:], *mine] if others else mine
