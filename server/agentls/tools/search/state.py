"""The state of one search_text call, shared by both engines (ripgrep and the Python walk):
what to look in, the compiled pattern, the hits so far and when to stop, the pending and
open-buffer texts that replace the disk, and the result the model gets."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pathspec import GitIgnoreSpec

from agentls.tools.output import ok
from agentls.workspace.fence import FenceError

if TYPE_CHECKING:
    from agentls.workspace.fence import Workspace


FileSource = Literal["disk", "buffer", "skip"]


MAX_RESULTS_LIMIT = 500


LINE_TEXT_LIMIT = 300


# Matching lines counted (not kept) past max_results, to say roughly how many there are.
COUNT_LIMIT = 1_000


@dataclass(frozen=True)
class SearchHit:
    path: str
    """As the model writes it (``Workspace.display_path``)."""
    line: int
    column: int
    """1-based, in characters."""
    text: str
    """The line without its line break, cut around the match when long."""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.text}"


@dataclass(frozen=True)
class SearchTarget:
    root: Path
    root_index: int
    rel: str
    """Relative to the root, "." for the whole root."""


class InvalidRegex(Exception):
    pass


@dataclass
class SearchState:
    ws: Workspace
    query: str
    regex: bool
    case_sensitive: bool
    glob: str | None
    limit: int
    hits: list[tuple[tuple[Any, ...], SearchHit]] = field(default_factory=list)
    seen: int = 0
    stopped: bool = False
    capped: bool = False
    """A file reached the per-file cap, so ``seen`` is a lower bound."""
    _file: tuple[int, str] = (-1, "")
    _file_seen: int = 0
    _stream_kept: int = 0
    _pattern: re.Pattern[str] | None = None
    _glob_spec: GitIgnoreSpec | None = None

    @property
    def per_file(self) -> int:
        return self.limit + 1

    @property
    def pattern(self) -> re.Pattern[str]:
        """The query for Python's `re` (fallback and pending text)."""
        if self._pattern is None:
            source = self.query if self.regex else re.escape(self.query)
            try:
                self._pattern = re.compile(source, 0 if self.case_sensitive else re.IGNORECASE)
            except re.error as exc:
                raise InvalidRegex(str(exc)) from exc
        return self._pattern

    def file_source(self, target: SearchTarget, rel: str) -> tuple[FileSource, str]:
        """Where this file's text comes from: disk, an open editor buffer, or nowhere."""
        abs_path = target.root / rel
        if self.ws.changeset.touched(abs_path):
            return "skip", ""  # searched in add_overlay, in its pending text
        if not self.ws.is_visible(abs_path):
            return "skip", ""
        document = self.ws.document(abs_path)
        return ("buffer", document[0]) if document is not None else ("disk", "")

    def glob_allows(self, target: SearchTarget, rel: str) -> bool:
        """ripgrep's `--glob` for one file: a plain glob must match, `!glob` must not.
        Like rg, a file given as the search path is searched whatever the glob."""
        if self.glob is None or rel == target.rel:
            return True
        negated = self.glob.startswith("!")
        if self._glob_spec is None:
            self._glob_spec = GitIgnoreSpec.from_lines([self.glob[1:] if negated else self.glob])
        return bool(self._glob_spec.match_file(rel)) != negated

    def add(
        self, target: SearchTarget, rel: str, line: int, column: int, text: str, *,
        stream: bool = True,
    ) -> None:
        """Count one visible matching line and keep it if it may be among the first ``limit``.

        The stream (rg's output or the walk) comes in path order, so its first ``limit`` hits
        are enough; pending-text hits come apart and may sort anywhere, so all are kept.
        """
        self.seen += 1
        if self._file != (target.root_index, rel):
            self._file, self._file_seen = (target.root_index, rel), 0
        self._file_seen += 1
        self.capped = self.capped or self._file_seen >= self.per_file
        if not stream or self._stream_kept < self.limit:
            self._stream_kept += stream
            abs_path = target.root / rel
            hit = SearchHit(self.ws.display_path(abs_path), line, column, _cut(text, column))
            key = (target.root_index, tuple(rel.split("/")), line, column)
            self.hits.append((key, hit))
        if stream and self.seen >= max(COUNT_LIMIT, self.limit + 1):
            self.stopped = True

    def add_text(self, target: SearchTarget, rel: str, text: str, *, stream: bool = True) -> None:
        for line, column, line_text in _match_lines(self.pattern, text, self.per_file):
            if stream and self.stopped:
                return
            self.add(target, rel, line, column, line_text, stream=stream)

    def add_overlay(self, targets: list[SearchTarget]) -> None:
        """Files with pending text in the ChangeSet (created, edited or renamed this run)."""
        changeset = self.ws.changeset
        for target in targets:
            base = target.root / target.rel if target.rel != "." else target.root
            pending = [base] if changeset.current_text(base) is not None else []
            pending += changeset.files_under(base)
            for abs_path in sorted(pending, key=lambda p: p.parts):
                rel = _relative(abs_path, target.root)
                text = changeset.current_text(abs_path)
                if rel is None or text is None or not self.glob_allows(target, rel):
                    continue
                if self.ws.is_visible(abs_path):
                    self.add_text(target, rel, text, stream=False)


def search_targets(ws: Workspace, path: str) -> list[SearchTarget]:
    if path.strip() in ("", ".") and len(ws.roots) > 1:
        return [SearchTarget(root, index, ".") for index, root in enumerate(ws.roots)]
    wp = ws.resolve(path)
    if not ws.exists(wp):
        raise FenceError(
            "NOT_FOUND",
            f"{wp.display!r} does not exist. Use list_files to see what exists, or search "
            "from '.'.",
        )
    return [SearchTarget(wp.root, ws.roots.index(wp.root), wp.rel)]


def _relative(abs_path: Path, root: Path) -> str | None:
    try:
        return abs_path.relative_to(root).as_posix()
    except ValueError:
        return None


def _cut(text: str, column: int) -> str:
    """Long lines (minified code) are cut to a window that shows the match."""
    text = text.rstrip()
    if len(text) <= LINE_TEXT_LIMIT:
        return text
    start = max(0, min(column - 1 - LINE_TEXT_LIMIT // 3, len(text) - LINE_TEXT_LIMIT))
    window = text[start : start + LINE_TEXT_LIMIT]
    return ("…" if start else "") + window + ("…" if start + LINE_TEXT_LIMIT < len(text) else "")


def _match_lines(
    pattern: re.Pattern[str], text: str, per_file: int
) -> Iterator[tuple[int, int, str]]:
    """(line number, column, line) of the first match on each matching line, like rg."""
    if pattern.search(text) is None:
        return
    text = text.removeprefix("\ufeff")  # rg strips a byte-order mark
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    found = 0
    for number, line in enumerate(lines, start=1):
        match = pattern.search(line)
        if match is None:
            continue
        yield number, match.start() + 1, line.rstrip("\r")
        found += 1
        if found >= per_file:
            return


def search_result(search: SearchState, path: str, limit: int) -> dict[str, Any]:
    ordered = sorted(search.hits, key=lambda item: item[0])
    matches = [str(hit) for _, hit in ordered[:limit]]
    truncated = search.seen > len(matches)
    data: dict[str, Any] = {
        "query": search.query,
        "matches": matches,
        "count": len(matches),
        "truncated": truncated,
        "total_seen": search.seen,
    }
    if not matches:
        hint = "" if search.case_sensitive else " (case-insensitive)"
        data["message"] = (
            f"No matches for {search.query!r}{hint} in {path!r}. Try another spelling, a "
            "shorter query, a regex, or a wider path."
        )
    elif truncated:
        exact = not (search.stopped or search.capped)
        total = str(search.seen) if exact else f"at least {search.seen}"
        data["message"] = (
            f"Showing the first {len(matches)} of {total} matching lines. Narrow the search "
            "with path, glob or a more specific query."
        )
    return ok(**data)
