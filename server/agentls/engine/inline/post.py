"""Inline completion: where a streamed completion stops, and how its text is cleaned.

``StopRule`` is fed the text as it streams and says when to stop early: at a stop string, at
the end of the line when the cursor is mid-line, at the end of the block (a line indented
less than the cursor's line, or back to its level after opening a block), or at the line
limit. ``clean`` is the post-processing table, applied to the final text in order (each row
is one function, tested alone in tests/unit/engine/test_inline_post.py):

| step | what |
|---|---|
| fences | a chat model's markdown fence around the answer is removed |
| echo | an answer repeating the whole file or the cursor line keeps only the middle |
| suffix | what duplicates the text after the cursor is dropped (only the suffix: nothing) |
| brackets | a bracket closed that the line never opened ends the answer there |
| indentation | spaces become tabs in a tab-indented file, tabs spaces in a space-indented one |
| line endings | "\\n" becomes the document's "\\r\\n" where it uses them |
| empty | whitespace only, or a repeat of the line above: nothing |
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {v: k for k, v in OPENERS.items()}
_FENCE = re.compile(r"^\s*```[\w+-]*\n(.*?)(?:\n```\s*)?$", re.DOTALL)
BLOCK_OPENERS = (":", "{", "(", "[", "=>", "->", " do", " then")


@dataclass(frozen=True)
class Surroundings:
    """What the cleaning needs to know about the place of the cursor."""

    line_prefix: str  # the cursor line before the cursor
    line_suffix: str  # the cursor line after the cursor (no line ending)
    suffix: str  # the text after the cursor (a window), "\n" line endings
    prefix_tail: str  # the end of the text before the cursor (a window), "\n" line endings
    previous_line: str  # the nearest non-blank line above the cursor line
    indent_unit: str  # "\t" or some spaces: the file's indentation step
    eol: str  # "\n" or "\r\n"

    @property
    def mid_line(self) -> bool:
        return bool(self.line_suffix.strip()) and not all(
            c in ")]}\"'`;,:" for c in self.line_suffix.strip())


def indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def width(indent: str, tab: int = 4) -> int:
    return sum(tab if c == "\t" else 1 for c in indent)


class StopRule:
    """Decides, as text streams in, where the completion ends."""

    def __init__(self, where: Surroundings, stops: Sequence[str], max_lines: int) -> None:
        self.where = where
        self.stops = [s for s in stops if s]
        self.max_lines = max_lines
        cursor_line = where.line_prefix
        self.base = width(indentation(cursor_line) if cursor_line.strip() else cursor_line)
        self.opens_block = cursor_line.rstrip().endswith(BLOCK_OPENERS)

    def cut(self, text: str, *, final: bool = False) -> tuple[str, bool]:
        """The text up to where it should end, and whether it ended (stop streaming);
        ``final``: the stream is over, so its last line is complete too."""
        ended = False
        for stop in self.stops:
            at = text.find(stop)
            if at >= 0:
                text, ended = text[:at], True
        if self.where.mid_line and "\n" in text:
            return text[: text.index("\n")], True
        lines = text.split("\n")
        complete = lines if ended or final else lines[:-1]  # the last line may still grow
        opened = self.opens_block or bool(lines[0].rstrip().endswith(BLOCK_OPENERS))
        depth = max(0, _depth_change(self.where.line_prefix))  # brackets the line opened
        for number, line in enumerate(complete):
            if number >= self.max_lines:
                return "\n".join(lines[:number]), True
            if number > 0 and line.strip():
                level = width(indentation(line))
                closes_only = all(c in ")]}" for c in line.strip()) and depth > 0
                if level < self.base or (opened and level <= self.base and not closes_only):
                    return "\n".join(lines[:number]).rstrip("\n"), True
                if closes_only and level <= self.base:
                    return "\n".join(lines[: number + 1]), True
            depth += _depth_change(line)
        return text, ended


def _depth_change(line: str) -> int:
    return sum(1 for c in line if c in OPENERS) - sum(1 for c in line if c in CLOSERS)


# --- the table -----------------------------------------------------------------------------


def strip_fences(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text


def strip_echo(text: str, where: Surroundings) -> str:
    """An answer that starts again from the file's beginning or the cursor line keeps only
    what goes between the prefix and the suffix; one that cannot be placed is dropped."""
    tail = where.prefix_tail[-200:]
    if len(tail) >= 40 and tail in text:  # the whole file (or a long stretch of it) again
        text = text[text.rindex(tail) + len(tail):]
        head = where.suffix[:200].strip()
        if head and head[:40] in text:
            text = text[: text.index(head[:40])]
        return text
    line = where.line_prefix.strip()
    echoed = text.lstrip()
    if len(line) >= 4 and echoed.startswith(line) and not where.line_prefix.endswith(
            echoed[: len(line)]):
        return echoed[len(line):]
    return text


def drop_suffix_overlap(text: str, where: Surroundings) -> str:
    """Drop the end of the answer that the text after the cursor already has: the rest of the
    line (``foo(a)`` before ``)``), or whole lines the suffix starts with."""
    suffix = where.suffix
    if not text or not suffix.strip():
        return text
    if text.strip() == suffix.strip()[: len(text.strip())]:
        return ""  # the answer is only (the start of) the suffix
    lines = text.split("\n")
    suffix_lines = [s.strip() for s in suffix.split("\n") if s.strip()][:20]
    if len(lines) > 1 and suffix_lines:
        # whole lines of the suffix at the answer's end (the model wrote past the hole)
        for cut in range(1, len(lines)):
            tail = [s.strip() for s in lines[cut:] if s.strip()]
            if tail and tail == suffix_lines[: len(tail)]:
                text = "\n".join(lines[:cut]).rstrip()
                break
    line_rest = where.line_suffix
    if line_rest:
        stripped = line_rest.strip()
        for k in range(min(len(stripped), len(text)), 0, -1):
            if text.endswith(stripped[:k]):
                return text[:-k]
    return text


def balance_brackets(text: str, where: Surroundings) -> str:
    """Cut the answer where it closes a bracket the line never opened (it wandered out of
    the expression), unless the suffix's line starts by closing it already."""
    stack: list[str] = []
    for char in where.line_prefix:
        if char in OPENERS:
            stack.append(char)
        elif char in CLOSERS and stack and stack[-1] == CLOSERS[char]:
            stack.pop()
    in_string: str | None = None
    for index, char in enumerate(text):
        if in_string:
            if char == in_string:
                in_string = None
            continue
        if char in "\"'`":
            in_string = char
        elif char in OPENERS:
            stack.append(char)
        elif char in CLOSERS:
            if stack and stack[-1] == CLOSERS[char]:
                stack.pop()
            elif "\n" not in text[:index]:
                return text[:index].rstrip()
    return text


def match_indentation(text: str, where: Surroundings) -> str:
    unit = where.indent_unit
    out = []
    for number, line in enumerate(text.split("\n")):
        if number == 0:
            out.append(line)
            continue
        lead = indentation(line)
        if unit == "\t" and " " in lead:
            spaces = width(lead)
            lead = "\t" * (spaces // 4) + " " * (spaces % 4)
        elif unit != "\t" and "\t" in lead:
            lead = lead.replace("\t", unit)
        out.append(lead + line[len(indentation(line)):])
    return "\n".join(out)


def is_empty_or_repeat(text: str, where: Surroundings) -> bool:
    if not text.strip():
        return True
    first = (where.line_prefix + text.split("\n")[0]).strip()
    return bool(first) and first == where.previous_line.strip() and "\n" not in text.strip()


def clean(text: str, where: Surroundings, *, chat: bool = False) -> str:
    """The post-processing table over a finished completion ("" when nothing is left)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if chat:
        text = strip_fences(text).replace("<CURSOR>", "")
    text = strip_echo(text, where)
    text = drop_suffix_overlap(text, where)
    text = balance_brackets(text, where)
    text = match_indentation(text, where).rstrip()
    if not where.line_prefix.strip() and where.line_prefix and text.startswith(where.line_prefix):
        text = text[len(where.line_prefix):]  # the model repeated the cursor line's indent
    if is_empty_or_repeat(text, where):
        return ""
    return text.replace("\n", where.eol) if where.eol != "\n" else text
