"""What the servers answered, as plain data the tools and the check read (no lsprotocol),
and which problems are new since the turn began."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}


@dataclass(frozen=True)
class Problem:
    """One diagnostic: where (1-based line and column), how bad, what, from which server."""

    path: str  # as the model writes it (workspace-relative)
    line: int
    column: int
    severity: str  # error | warning | info | hint
    message: str
    source: str = ""
    code: str = ""
    line_text: str = ""
    new: bool = False  # not there before this turn's changes

    def key(self) -> tuple[str, str, str, str]:
        """What makes two problems the same one across edits that moved it."""
        return (self.severity, self.message, self.code, self.line_text.strip())


@dataclass(frozen=True)
class Place:
    """A location in a file: a definition, a reference, a symbol."""

    path: str
    line: int
    column: int
    line_text: str = ""
    name: str = ""  # a symbol's name
    kind: str = ""  # a symbol's kind (function, class ...)
    container: str = ""


@dataclass
class FileProblems:
    path: str
    problems: list[Problem] = field(default_factory=list)
    servers: list[str] = field(default_factory=list)  # the servers that answered for it


@dataclass
class Answer:
    """A tool's answer and the servers that could not give theirs (name -> why)."""

    places: list[Place] = field(default_factory=list)
    files: list[FileProblems] = field(default_factory=list)
    text: str = ""  # a hover's text
    failures: dict[str, str] = field(default_factory=dict)
    servers: list[str] = field(default_factory=list)


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
