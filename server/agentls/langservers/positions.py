"""Converting between the model's words and LSP's: 1-based line and character columns and
LSP's UTF-16 positions, hover contents as text, and which problems are new since the turn
began."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types as lsp

from agentls.langservers.results import Problem


def at(text: str, line: int, column: int) -> lsp.Position:
    """1-based line and character column -> LSP's 0-based line and UTF-16 character."""
    lines = text.splitlines()
    row = max(line - 1, 0)
    line_text = lines[row] if row < len(lines) else ""
    prefix = line_text[:max(column - 1, 0)]
    return lsp.Position(line=row, character=len(prefix.encode("utf-16-le")) // 2)


def column(line_text: str, utf16: int) -> int:
    """LSP's UTF-16 character -> the 0-based index of the character in the line."""
    encoded = line_text.encode("utf-16-le")[:utf16 * 2]
    return len(encoded.decode("utf-16-le", "ignore"))


def hover_text(contents: Any) -> str:
    if isinstance(contents, lsp.MarkupContent):
        return contents.value
    if isinstance(contents, str):
        return contents
    if isinstance(contents, lsp.MarkedStringWithLanguage):
        return contents.value
    if isinstance(contents, list):
        return "\n".join(hover_text(c) for c in contents)
    return ""


def with_new(problem: Problem) -> Problem:
    return Problem(**{**problem.__dict__, "new": True})


def mark_new(now: Sequence[Problem], before: Sequence[Problem]) -> list[Problem]:
    """``now`` with each problem that is not among ``before`` (by message, severity, code
    and line text, each counted) marked new."""
    left: dict[tuple[str, str, str, str], int] = {}
    for problem in before:
        left[problem.key()] = left.get(problem.key(), 0) + 1
    out = []
    for problem in now:
        if left.get(problem.key(), 0) > 0:
            left[problem.key()] -= 1
            out.append(problem)
        else:
            out.append(with_new(problem))
    return out


