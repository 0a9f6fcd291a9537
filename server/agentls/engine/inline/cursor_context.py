"""Inline completion: the context around the cursor, within a token budget.

The prefix and suffix windows are cut from the document around the cursor offset (never
the whole text: a 20 MB file costs the same as a small one, beyond finding the line);
line endings become "\\n" for the model. Other files come as ``ContextFile`` snippets: the
other open buffers where the person worked last, the definitions of the names the file
imports (Python, from files inside the fence), the search index's related chunks. They are
gathered off the request path (``related_files``, run in a thread by the caller) and the
request takes what is ready, so a keystroke never waits for disk.
"""

from __future__ import annotations

import ast
import itertools
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentls.engine.inline.post import Surroundings, indentation
from agentls.llm.fim_templates import ContextFile

CHARS_PER_TOKEN = 3.5  # code averages a little under four characters a token
PREFIX_SHARE, SUFFIX_SHARE = 0.55, 0.2  # of the budget; the rest is for other files
SNIPPET_LINES = 40
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+(?:\(([\w\s,]+)\)|([\w \t,]+))"
                     r"|import[ \t]+([\w.]+))", re.MULTILINE)


@dataclass(frozen=True)
class Window:
    prefix: str  # "\n" line endings
    suffix: str
    where: Surroundings
    offset: int  # of the cursor in the document text


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
        return len(text.encode("utf-16-le")) // 2
    return len(text.encode())


def indent_unit(text: str) -> str:
    """The file's indentation step: a tab, or the most common small run of spaces."""
    sample = text[:20_000]
    tabs = len(re.findall(r"^\t", sample, re.MULTILINE))
    spaces = re.findall(r"^( +)\S", sample, re.MULTILINE)
    if tabs > len(spaces):
        return "\t"
    widths = sorted({len(s) for s in spaces if len(s) <= 8})
    return " " * (widths[0] if widths else 4)


def window(text: str, offset: int, budget_tokens: int, *, unit: str, eol: str) -> Window:
    """The prefix and suffix windows around ``offset`` within the budget's shares."""
    prefix_chars = int(budget_tokens * PREFIX_SHARE * CHARS_PER_TOKEN)
    suffix_chars = int(budget_tokens * SUFFIX_SHARE * CHARS_PER_TOKEN)
    start = max(0, offset - prefix_chars)
    if start > 0:
        newline = text.find("\n", start, offset)
        start = newline + 1 if newline >= 0 else start
    end = min(len(text), offset + suffix_chars)
    if end < len(text):
        newline = text.rfind("\n", offset, end)
        end = newline + 1 if newline >= 0 else end
    prefix = text[start:offset].replace("\r\n", "\n")
    suffix = text[offset:end].replace("\r\n", "\n")
    line_start = prefix.rfind("\n") + 1
    line_prefix = prefix[line_start:]
    line_suffix = suffix.split("\n", 1)[0]
    above = [line for line in prefix[:line_start].split("\n") if line.strip()]
    where = Surroundings(line_prefix=line_prefix, line_suffix=line_suffix.rstrip("\r"),
                         suffix=suffix, prefix_tail=prefix[-400:],
                         previous_line=above[-1] if above else "", indent_unit=unit, eol=eol)
    return Window(prefix, suffix, where, offset)


def fit_files(files: Iterable[ContextFile], budget_tokens: int) -> list[ContextFile]:
    """As many of ``files`` (in order) as fit the other-files share of the budget."""
    left = int(budget_tokens * (1 - PREFIX_SHARE - SUFFIX_SHARE) * CHARS_PER_TOKEN)
    chosen: list[ContextFile] = []
    for item in files:
        cost = len(item.text) + len(item.path) + 16
        if cost > left:
            continue
        chosen.append(item)
        left -= cost
    return chosen


def chat_prompt(path: str, win: Window, files: Sequence[ContextFile]) -> str:
    """The user message of the chat fallback: other files, then the file with <CURSOR>."""
    parts = [f"File {f.path} (for reference):\n{f.text}\n" for f in files]
    parts.append(f"File {path}:\n{win.prefix}<CURSOR>{win.suffix}")
    return "\n".join(parts)


# --- other files (gathered off the request path) ---------------------------------------------


def snippet_around(text: str, line: int, lines: int = SNIPPET_LINES) -> str:
    all_lines = text.splitlines()
    start = max(0, line - lines // 2)
    return "\n".join(all_lines[start:start + lines])


def imported_definitions(prefix: str, module_file: Callable[[str], Path | None],
                         read: Callable[[Path], str | None], rel: Callable[[Path], str]
                         ) -> list[ContextFile]:
    """For Python: the signatures (and first docstring line) of the names the file imports
    from modules inside the workspace. ``module_file`` finds a module's file (None: not in
    the workspace, or fenced); ``read`` gives its text (None: unreadable, too big)."""
    found: list[ContextFile] = []
    for match in _IMPORT.finditer(prefix[:20_000]):
        module = match.group(1) or match.group(4)
        listed = match.group(2) or match.group(3) or ""
        names = {n.split(" as ")[0].strip() for n in listed.split(",") if n.strip()}
        path = module_file(module)
        text = read(path) if path is not None else None
        if not text:
            continue
        summary = _signatures(text, names)
        if summary:
            found.append(ContextFile(rel(path) if path else module, summary))
    return found


def _signatures(source: str, names: set[str]) -> str:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ""
    lines = source.splitlines()
    out: list[str] = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if names and node.name not in names:
            continue
        body_start = node.body[0].lineno - 1 if node.body else node.lineno
        header = lines[node.lineno - 1:body_start]
        doc = ast.get_docstring(node)
        if doc:
            pad = indentation(lines[body_start]) if body_start < len(lines) else "    "
            header.append(f'{pad}"""{doc.splitlines()[0]}"""')
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    header.append(lines[item.lineno - 1])
        out.append("\n".join(header) + ("\n    ..." if not isinstance(node, ast.ClassDef)
                                         else ""))
    return "\n".join(out)[:4000]
