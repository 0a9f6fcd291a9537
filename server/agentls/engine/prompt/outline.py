"""Fitting a text within a token cap: the whole text, else its head and an outline of the
rest, else an outline of its imports and definitions, each with its line number.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

CountTokens = Callable[[str], int]

HEAD_LINES = 200
OUTLINE_LINE_CHARS = 160
# Text this many times longer (in characters) than a token cap is over it by any tokenizer.
_CHARS_PER_TOKEN_CEILING = 32


def fit_text(text: str, name: str, count_tokens: CountTokens, cap: int) -> tuple[str, str, str]:
    """(what to show, heading, note for the person or ""): the whole text if within ``cap``
    tokens; else its first HEAD_LINES lines (with an outline of the rest when it fits);
    else an outline of imports and definitions."""
    if _within(text, count_tokens, cap):
        return text, name, ""
    lines = text.splitlines(keepends=True)
    total = len(lines)
    head = "".join(lines[:HEAD_LINES])
    if total > HEAD_LINES and _within(head, count_tokens, cap):
        rest = outline_lines(lines[HEAD_LINES:], first_line=HEAD_LINES + 1)
        cut_marker = f"[... lines {HEAD_LINES + 1}-{total:,} cut"
        shown = head.rstrip("\n") + f"\n{cut_marker}]"
        what = f"lines 1-{HEAD_LINES} of {total:,}"
        if rest:
            with_rest = (head.rstrip("\n") + f"\n{cut_marker}; their imports and definitions, "
                         "with line numbers:]\n" + "\n".join(rest))
            if count_tokens(with_rest) <= cap:
                shown, what = with_rest, what + " and an outline of the rest"
        heading = (f"{name} (cut to {what}: the file is over {cap:,} tokens; read_file with "
                   "start_line/end_line for more)")
        return shown, heading, f"{name} was cut to {what}: it is over {cap:,} tokens."
    outline = _fit_lines(outline_lines(lines, first_line=1), count_tokens, cap)
    shown = "\n".join(outline) if outline else "(no imports or definitions found)"
    heading = (f"{name} (cut to an outline of its imports and definitions, with line numbers: "
               f"the file has {total:,} lines and is over {cap:,} tokens; read_file with "
               "start_line/end_line for the text)")
    return shown, heading, f"{name} was cut to an outline of its imports and definitions."


def _within(text: str, count_tokens: CountTokens, cap: int) -> bool:
    # Skips counting a text far too long for the cap: a tokenizer on megabytes takes seconds.
    return len(text) <= cap * _CHARS_PER_TOKEN_CEILING and count_tokens(text) <= cap


def _fit_lines(lines: list[str], count_tokens: CountTokens, cap: int) -> list[str]:
    kept: list[str] = []
    used = 0
    for line in lines:
        used += count_tokens(line) + 1
        if used > cap:
            kept.append("[... outline cut]")
            break
        kept.append(line)
    return kept


# Compiled on the first outline (engine/prompt/attachments.py imports this before a run's
# first request, which outlines nothing): ~1 ms.
_OUTLINE = (
    r"""^\s*(?:
        (?:from\s+\S+\s+)?import\b                          # Python, JS/TS, Go, Java
      | (?:pub(?:\([^)]*\))?\s+)?use\s+[\w:{]              # Rust
      | package\s+[\w.]+                                    # Go, Java
      | \#include\b
      | (?:async\s+)?def\s+\w | class\s+\w                  # Python (class: also JS/TS)
      | export\b                                            # JS/TS
      | (?:declare\s+)?(?:abstract\s+)?(?:async\s+)?function\b
      | (?:declare\s+)?(?:interface|enum|namespace)\s+\w
      | (?:(?:public|private|protected|static|readonly|abstract|override|async|get|set)\s+)+
        [\w$]+\s*(?:<[^>]*>)?\(                             # class members with modifiers
      | (?!(?:if|for|while|switch|catch|else|return|function|do|try|with)\b)
        [\w$]+\s*\([^;]*\)\s*(?::\s*[^;{]+)?\{\s*$           # methods: name(args) {
      | (?:const|let|var)\s+[\w$]+\s*(?::[^=]+)?=\s*(?:async\s*)?function\b
      | (?:const|let|var)\s+[\w$]+\s*(?::[^=]+)?=\s*(?:async\s*)?(?:\([^)]*\)|\w+)\s*(?::[^=]+)?=>
      | (?:const|let|var)\s+[\w${}\s,]+=\s*require\(
      | func\s | type\s+\w+                                 # Go (type: also TS, Rust)
      | (?:pub(?:\([^)]*\))?\s+)?(?:(?:const|async|unsafe|extern\s+"[^"]*")\s+)*fn\s+\w
      | (?:pub(?:\([^)]*\))?\s+)?(?:struct|trait|mod)\s+\w | impl\b
      | (?:pub(?:\([^)]*\))?\s+)?(?:const|static)\s+[A-Z_][A-Z0-9_]*\s*:
      | macro_rules!
    )"""
)


@functools.cache
def _outline() -> re.Pattern[str]:
    return re.compile(_OUTLINE, re.VERBOSE)


def outline_lines(lines: Sequence[str], *, first_line: int) -> list[str]:
    """Imports and definitions, one per line, each with its line number."""
    found = []
    outline = _outline()
    for number, line in enumerate(lines, start=first_line):
        if outline.match(line):
            text = line.rstrip()
            if len(text) > OUTLINE_LINE_CHARS:
                text = text[:OUTLINE_LINE_CHARS] + " ..."
            found.append(f"{number}: {text}")
    return found
