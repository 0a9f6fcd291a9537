"""search_text's ripgrep engine: the `rg --json` command line that approximates the fence
(ignore files, the deny list as globs), and reading its matches as they stream."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentls.tools.search.state import (
    MAX_RESULTS_LIMIT,
    FileSource,
    InvalidRegex,
    SearchState,
    SearchTarget,
    search_targets,
)
from agentls.workspace.fence_rules import AGENTLSIGNORE, GITIGNORE

if TYPE_CHECKING:
    from agentls.workspace.fence import Workspace


_READ_CHUNK = 1 << 16


_MATCH_PREFIX = b'{"type":"match"'


def find_rg() -> str | None:
    """The `rg` of the ripgrep wheel next to this interpreter, else one on PATH."""
    beside = Path(sys.executable).parent / ("rg.exe" if os.name == "nt" else "rg")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


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
    target = search_targets(ws, path)[0]
    limit = min(max(int(max_results), 1), MAX_RESULTS_LIMIT)
    search = SearchState(ws, query, regex, case_sensitive, glob, limit)
    return _rg_argv(rg, ws, target, search), target.root


def _rg_argv(rg: str, ws: Workspace, target: SearchTarget, search: SearchState) -> list[str]:
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


async def run_rg(rg: str, search: SearchState, target: SearchTarget) -> None:
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
        raise InvalidRegex(_regex_error(stderr))


def _regex_error(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    detail = next((line for line in lines if line.startswith("error:")), lines[-1])
    return detail.removeprefix("error:").strip()


class _RgReader:
    """Turns rg's match messages into hits, checking each file once."""

    def __init__(self, search: SearchState, target: SearchTarget) -> None:
        self.search = search
        self.target = target
        self.rel = ""
        self.source: FileSource = "skip"

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
