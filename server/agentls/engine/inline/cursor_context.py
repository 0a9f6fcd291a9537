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
