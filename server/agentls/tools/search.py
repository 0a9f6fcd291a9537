"""search_text: ripgrep over the workspace, held to the fence, seeing the run's pending changes.

ripgrep does the walking and matching (`--json`, sorted by path so results are stable and
the first N are the same every time). Its ignore rules are set to approximate the fence
(`.gitignore` inside the roots, `.agentlsignore`, the deny list as globs) and every file
with a hit is re-checked with ``Workspace.is_visible``, so rg may only ever show too much,
never leak. Files the ChangeSet touched are searched in their pending text instead of on
disk, and so are files open in the editor, but only those rg finds a match in on disk
(the workspace lists no open buffers). Without `rg`, a slower pure-Python walk gives the
same results (it searches every open buffer).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pathspec import GitIgnoreSpec

from agentls.tools.fence_rules import AGENTLSIGNORE, GITIGNORE
from agentls.tools.output import fail, ok
from agentls.tools.workspace import FenceError

if TYPE_CHECKING:
    from agentls.tools.workspace import Workspace

log = logging.getLogger(__name__)

Engine = Literal["auto", "rg", "python"]
_Source = Literal["disk", "buffer", "skip"]

MAX_RESULTS_LIMIT = 500
LINE_TEXT_LIMIT = 300
# Matching lines counted (not kept) past max_results, to say roughly how many there are.
COUNT_LIMIT = 1_000
_READ_CHUNK = 1 << 16
_MATCH_PREFIX = b'{"type":"match"'

_fallback_warned = False


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


def find_rg() -> str | None:
    """The `rg` of the ripgrep wheel next to this interpreter, else one on PATH."""
    beside = Path(sys.executable).parent / ("rg.exe" if os.name == "nt" else "rg")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


async def search_text(
    ws: Workspace,
    query: str,
    path: str = ".",
    regex: bool = False,
    case_sensitive: bool = False,
    glob: str | None = None,
    max_results: int = 50,
    *,
    engine: Engine = "auto",
) -> dict[str, Any]:
    """Lines matching ``query`` under ``path``, sorted by path, line and column.

    ``glob`` follows ripgrep's `--glob` (`*.py`, `src/**/*.ts`, `!tests/**`). At most
    ``max_results`` (1..500) lines are returned; ``truncated`` says there were more and
    ``total_seen`` how many were seen (counting stops at ``COUNT_LIMIT``).
    ``engine`` forces ripgrep or the pure-Python walk (tests, benchmarks).
    """
    if not query:
        return fail("EMPTY_QUERY", "The query is empty. Pass the text (or regex) to search for.")
    if "\n" in query:
        return fail(
            "MULTILINE_QUERY",
            "search_text matches within one line; the query contains a line break. Search "
            "for a single line of the text instead.",
        )
    limit = min(max(int(max_results), 1), MAX_RESULTS_LIMIT)
    try:
        targets = _targets(ws, path)
    except FenceError as exc:
        return fail(exc.code, exc.message)

    rg = find_rg() if engine != "python" else None
    if engine == "rg" and rg is None:
        return fail("RG_NOT_FOUND", "ripgrep (rg) is not installed; search with engine='auto'.")
    if rg is None:
        _warn_fallback()

    search = _Search(ws, query, regex, case_sensitive, glob, limit)
    try:
        for target in targets:
            if search.stopped:
                break
            if rg is not None:
                await _run_rg(rg, search, target)
            else:
                await asyncio.to_thread(_walk_python, search, target)
        search.add_overlay(targets)
    except _InvalidRegex as exc:
        return fail(
            "INVALID_REGEX",
            f"The regex {query!r} is invalid: {exc}. Fix it, or pass regex=false to search "
            "for the text literally.",
        )
    return _result(search, path, limit)


# --- the search state shared by both engines --------------------------------------------


@dataclass(frozen=True)
class _Target:
    root: Path
    root_index: int
    rel: str
    """Relative to the root, "." for the whole root."""


class _InvalidRegex(Exception):
    pass


@dataclass
class _Search:
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
                raise _InvalidRegex(str(exc)) from exc
        return self._pattern

    def file_source(self, target: _Target, rel: str) -> tuple[_Source, str]:
        """Where this file's text comes from: disk, an open editor buffer, or nowhere."""
        abs_path = target.root / rel
        if self.ws.changeset.touched(abs_path):
            return "skip", ""  # searched in add_overlay, in its pending text
        if not self.ws.is_visible(abs_path):
            return "skip", ""
        document = self.ws.document(abs_path)
        return ("buffer", document[0]) if document is not None else ("disk", "")

    def glob_allows(self, target: _Target, rel: str) -> bool:
        """ripgrep's `--glob` for one file: a plain glob must match, `!glob` must not.
        Like rg, a file given as the search path is searched whatever the glob."""
        if self.glob is None or rel == target.rel:
            return True
        negated = self.glob.startswith("!")
        if self._glob_spec is None:
            self._glob_spec = GitIgnoreSpec.from_lines([self.glob[1:] if negated else self.glob])
        return bool(self._glob_spec.match_file(rel)) != negated

    def add(
        self, target: _Target, rel: str, line: int, column: int, text: str, *, stream: bool = True
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

    def add_text(self, target: _Target, rel: str, text: str, *, stream: bool = True) -> None:
        for line, column, line_text in _match_lines(self.pattern, text, self.per_file):
            if stream and self.stopped:
                return
            self.add(target, rel, line, column, line_text, stream=stream)

    def add_overlay(self, targets: list[_Target]) -> None:
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


def _targets(ws: Workspace, path: str) -> list[_Target]:
    if path.strip() in ("", ".") and len(ws.roots) > 1:
        return [_Target(root, index, ".") for index, root in enumerate(ws.roots)]
    wp = ws.resolve(path)
    if not ws.exists(wp):
        raise FenceError(
            "NOT_FOUND",
            f"{wp.display!r} does not exist. Use list_files to see what exists, or search "
            "from '.'.",
        )
    return [_Target(wp.root, ws.roots.index(wp.root), wp.rel)]


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


def _result(search: _Search, path: str, limit: int) -> dict[str, Any]:
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


def _warn_fallback() -> None:
    global _fallback_warned
    if not _fallback_warned:
        _fallback_warned = True
        log.warning("ripgrep (rg) not found: search_text uses a pure-Python search, slower.")


# --- ripgrep ----------------------------------------------------------------------------


def rg_command(
    ws: Workspace,
    query: str,
    path: str = ".",
    regex: bool = False,
    case_sensitive: bool = False,
    glob: str | None = None,
    max_results: int = 50,
) -> tuple[list[str], Path]:
    """The rg command line search_text runs for ``path``, and its working directory.

    For benchmarks: run it directly to compare search_text with bare ripgrep.
    """
    rg = find_rg()
    if rg is None:
        raise FileNotFoundError("rg")
    target = _targets(ws, path)[0]
    limit = min(max(int(max_results), 1), MAX_RESULTS_LIMIT)
    search = _Search(ws, query, regex, case_sensitive, glob, limit)
    return _rg_argv(rg, ws, target, search), target.root


def _rg_argv(rg: str, ws: Workspace, target: _Target, search: _Search) -> list[str]:
    argv = [
        rg, "--json", "--no-config", "--sort", "path", "--hidden", "--no-messages",
        # The fence reads .gitignore files inside the roots only, and no other ignore files.
        "--no-require-git", "--no-ignore-parent", "--no-ignore-dot", "--no-ignore-exclude",
        "--no-ignore-global",
        "--max-count", str(search.per_file),
    ]
    if not search.regex:
        argv.append("--fixed-strings")
    argv.append("--case-sensitive" if search.case_sensitive else "--ignore-case")
    agentlsignore = target.root / AGENTLSIGNORE
    if agentlsignore.is_file():
        argv += ["--ignore-file", str(agentlsignore)]
        if _has_negation(agentlsignore):
            # It may show git-ignored files, and rg ranks --ignore-file below .gitignore.
            argv.append("--no-ignore-vcs")
    root_gitignore = target.root / GITIGNORE
    if target.rel != "." and root_gitignore.is_file():
        # A sub-folder search does not see the root's .gitignore otherwise.
        argv += ["--ignore-file", str(root_gitignore)]
    if search.glob:
        argv += ["--glob", search.glob]
    argv += [f"--iglob=!{pattern}" for pattern in _deny_globs(ws.deny)]
    argv += ["--regexp", search.query, "--", target.rel]
    return argv


def _deny_globs(deny: tuple[str, ...]) -> list[str]:
    """Deny patterns rg can apply; with negations only folder patterns are safe to pass
    (a file cannot be re-included inside an excluded folder). The re-check does the rest."""
    negated = {p[1:] for p in deny if p.startswith("!")}
    patterns = [p for p in deny if p and not p.startswith(("!", "#"))]
    if negated:
        patterns = [p for p in patterns if p.endswith("/") and p not in negated]
    return patterns


def _has_negation(ignore_file: Path) -> bool:
    try:
        lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    return any(line.lstrip().startswith("!") for line in lines)


async def _run_rg(rg: str, search: _Search, target: _Target) -> None:
    process = await asyncio.create_subprocess_exec(
        *_rg_argv(rg, search.ws, target, search),
        cwd=target.root,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    errors = asyncio.create_task(process.stderr.read())
    reader = _RgReader(search, target)
    try:
        buffer = bytearray()
        while not search.stopped and (chunk := await process.stdout.read(_READ_CHUNK)):
            buffer += chunk
            start = 0
            while not search.stopped and (end := buffer.find(b"\n", start)) >= 0:
                if buffer.startswith(_MATCH_PREFIX, start):
                    reader.match(json.loads(buffer[start:end]))
                start = end + 1
            del buffer[:start]
    finally:
        if process.returncode is None:
            # Not process.kill(): its poll() races asyncio's child watcher (a reaped pid).
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
        # Python 3.11's wait() returns only once the pipes are closed: read them to the end.
        await process.stdout.read()
        stderr = (await errors).decode("utf-8", errors="replace").strip()
        await process.wait()
    if process.returncode == 2 and "regex" in stderr:
        raise _InvalidRegex(_regex_error(stderr))


def _regex_error(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    detail = next((line for line in lines if line.startswith("error:")), lines[-1])
    return detail.removeprefix("error:").strip()


class _RgReader:
    """Turns rg's match messages into hits, checking each file once."""

    def __init__(self, search: _Search, target: _Target) -> None:
        self.search = search
        self.target = target
        self.rel = ""
        self.source: _Source = "skip"

    def match(self, message: dict[str, Any]) -> None:
        data = message["data"]
        rel = _text(data["path"]).removeprefix("./")
        if rel != self.rel:
            self.rel = rel
            self.source, text = self.search.file_source(self.target, rel)
            if self.source == "buffer":
                # An open editor buffer: search its text instead of the disk's.
                self.search.add_text(self.target, rel, text)
        if self.source != "disk":
            return
        line_bytes = _bytes(data["lines"])
        submatches = data.get("submatches") or [{"start": 0}]
        start = int(submatches[0]["start"])
        column = len(line_bytes[:start].decode("utf-8", errors="replace")) + 1
        text = line_bytes.decode("utf-8", errors="replace").rstrip("\r\n")
        self.search.add(self.target, rel, int(data["line_number"]), column, text)


def _text(value: dict[str, str]) -> str:
    if "text" in value:
        return value["text"]
    return os.fsdecode(base64.b64decode(value["bytes"]))


def _bytes(value: dict[str, str]) -> bytes:
    if "text" in value:
        return value["text"].encode("utf-8")
    return base64.b64decode(value["bytes"])


# --- the pure-Python fallback -----------------------------------------------------------


def _walk_python(search: _Search, target: _Target) -> None:
    base = target.root / target.rel if target.rel != "." else target.root
    if base.is_file():
        files: Iterator[str] = iter([target.rel])
    else:
        files = _sorted_files(search, target.root, base)
    for rel in files:
        if search.stopped:
            return
        if not search.glob_allows(target, rel):
            continue
        source, text = search.file_source(target, rel)
        if source == "skip":
            continue
        if source == "disk":
            try:
                data = (target.root / rel).read_bytes()
            except OSError:
                continue
            if b"\0" in data:  # rg skips binary files
                continue
            text = data.decode("utf-8", errors="replace")
        search.add_text(target, rel, text)


def _sorted_files(search: _Search, root: Path, folder: Path) -> Iterator[str]:
    """Regular files under ``folder`` in rg's `--sort path` order (component by component),
    not entering folders the fence hides. Symlinks are skipped, as rg does without `--follow`."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink():
            continue
        path = Path(entry.path)
        if entry.is_dir():
            if search.ws.is_visible(path):
                yield from _sorted_files(search, root, path)
        elif entry.is_file():
            yield path.relative_to(root).as_posix()
