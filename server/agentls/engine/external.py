"""One run through an installed agent CLI (codex, copilot, claude) instead of a model server.

The CLI runs its own agent loop and edits files itself, so there is no ChangeSet to review
or write: the files it changed are read from ``git status`` before and after the run
(committed changes included, if it commits), reported in an ``EditEvent`` whose summary
says the CLI wrote them itself. ``--dry-run`` cannot apply to these backends.

Failure kinds map to exit codes in the CLI front-end: ``auth`` and ``missing`` → 2 (no
usable backend), ``failed`` → 1, ``timeout`` → 75.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

from agentls.engine.events import (
    DoneEvent,
    EditEvent,
    ErrorEvent,
    FileChangeInfo,
    Frontend,
    StatusEvent,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
)
from agentls.llm.agent_cli.backends import CLI_KINDS, AgentCli, CliKind, FailureKind, adapter_for
from agentls.llm.agent_cli.parse_output import CliActivity
from agentls.llm.messages import Usage
from agentls.settings.config import BackendConfig, Settings

ExternalStopReason = Literal["done", "error", "timeout"]

_COUNT_LIMIT = 1_000_000  # bytes; bigger files are reported without line counts


def is_external(backend: BackendConfig) -> bool:
    return backend.type in CLI_KINDS


def external_backend(settings: Settings, name: str) -> BackendConfig | None:
    """The configured backend ``name`` if it is an agent CLI; ``codex``, ``copilot`` and
    ``claude`` work unconfigured too. ``None`` for model servers and unknown names."""
    configured = settings.backends.get(name)
    if configured is not None:
        return configured if is_external(configured) else None
    if name in CLI_KINDS:
        return BackendConfig(type=name)
    return None


def secret_env_names(settings: Settings | None) -> set[str]:
    """Every environment variable agentls reads a key from: never handed to a CLI."""
    names = {"OPENAI_API_KEY"}
    if settings is not None:
        names |= {b.api_key_env for b in settings.backends.values() if b.api_key_env}
    return names


def adapter_for_backend(backend: BackendConfig, *, settings: Settings | None = None,
                        model: str | None = None, env: Mapping[str, str] | None = None
                        ) -> AgentCli:
    if not is_external(backend):
        raise ValueError(f"backend type {backend.type!r} is not an agent CLI")
    # The model goes to the CLI only when someone chose it; otherwise the CLI's own default.
    chosen = model or (backend.model if "model" in backend.model_fields_set else None)
    return adapter_for(cast(CliKind, backend.type), model=chosen, env=env,
                       secret_names=secret_env_names(settings))


@dataclass
class ExternalRunResult:
    backend: str  # the configured name
    cli: CliKind
    label: str  # "Codex CLI", "GitHub Copilot CLI", "Claude Code"
    stop_reason: ExternalStopReason
    text: str
    usage: Usage
    files: list[FileChangeInfo] = field(default_factory=list)
    git_tracked: bool = True  # False: cwd is not in a git repository, changes are unknown
    exit_code: int | None = None  # the CLI's own
    error_kind: FailureKind | None = None
    error_message: str = ""
    hint: str = ""
    session_id: str | None = None

    @property
    def changes_note(self) -> str:
        """For the summary: where the list of changed files comes from."""
        if not self.git_tracked:
            return (f"{self.label} edits files itself; the changed files cannot be listed "
                    "because the folder is not in a git repository")
        return (f"{self.label} wrote these changes itself (listed from git status before "
                "and after the run, not from a ChangeSet)")


async def run_external(
    backend: BackendConfig,
    name: str,
    prompt: str,
    cwd: Path,
    frontend: Frontend,
    *,
    settings: Settings | None = None,
    model: str | None = None,
    timeout_s: float | None = None,
    iteration: int = 1,
    env: Mapping[str, str] | None = None,
) -> ExternalRunResult:
    """Run ``prompt`` through the agent CLI ``backend`` in ``cwd``, streaming engine events.

    ``asyncio.CancelledError`` stops the CLI (and what it started) and propagates; files the
    CLI already wrote stay written.
    """
    cli = adapter_for_backend(backend, settings=settings, model=model, env=env)
    frontend.on_event(StatusEvent(message=f"{cli.label} ({name}) is working in {cwd}; it "
                                  "edits files itself", iteration=iteration))
    before = await git_snapshot(cwd)

    def on_text(text: str) -> None:
        frontend.on_event(TextDelta(text=text))

    def on_activity(activity: CliActivity) -> None:
        if activity.kind == "status":
            frontend.on_event(StatusEvent(message=activity.detail, iteration=iteration))
        elif activity.kind == "tool_started":
            frontend.on_event(ToolCallStarted(call_id=activity.call_id, name=activity.name,
                                              arguments=activity.detail))
        else:
            frontend.on_event(ToolResultEvent(call_id=activity.call_id, name=activity.name,
                                              ok=activity.ok, summary=activity.detail))

    outcome = await cli.run(prompt, cwd, on_text, on_activity, timeout_s=timeout_s)
    files = await changed_files(cwd, before)
    result = ExternalRunResult(
        backend=name,
        cli=cli.kind,
        label=cli.label,
        stop_reason="done" if outcome.ok else (
            "timeout" if outcome.failure == "timeout" else "error"),
        text=outcome.text,
        usage=outcome.usage or Usage(),
        files=files,
        git_tracked=before.root is not None,
        exit_code=outcome.exit_code,
        error_kind=outcome.failure,
        error_message=outcome.message,
        hint=_hint(cli, outcome.failure),
        session_id=outcome.session_id,
    )
    if files:
        frontend.on_event(EditEvent(files=tuple(files), summary=result.changes_note))
    elif not result.git_tracked:
        frontend.on_event(StatusEvent(message=result.changes_note, iteration=iteration))
    if outcome.failure is not None:
        frontend.on_event(ErrorEvent(message=f"{cli.label}: {outcome.message}",
                                     error_kind=outcome.failure, hint=result.hint))
    frontend.on_event(DoneEvent(stop_reason=result.stop_reason, text=result.text))
    return result


def _hint(cli: AgentCli, failure: FailureKind | None) -> str:
    if failure == "auth":
        return cli.login_hint
    if failure == "missing":
        return cli.install_hint
    if failure == "timeout":
        return "raise the time limit (--timeout) or give the CLI a smaller task"
    if failure == "failed":
        return f"see {cli.label}'s message; run `{cli.binary}` by hand in this folder for more"
    return ""


# --- what the CLI changed, from git -------------------------------------------------------------


@dataclass(frozen=True)
class _FileState:
    digest: str | None  # sha1 of the working file; None when it does not exist
    content: bytes | None  # kept when small enough to count lines later


@dataclass(frozen=True)
class GitSnapshot:
    """The working tree's state before a CLI run: HEAD and every file git reports dirty."""

    root: Path | None  # None: not in a git work tree (or git is not installed)
    head: str | None
    dirty: dict[str, _FileState]  # repository-relative posix path -> state


async def git_snapshot(cwd: Path) -> GitSnapshot:
    code, out = await _git(cwd, "rev-parse", "--show-toplevel")
    if code != 0:
        return GitSnapshot(None, None, {})
    root = Path(out.decode("utf-8", errors="replace").strip())
    head = await _head(root)
    paths = await _dirty_paths(root)
    states = await asyncio.to_thread(lambda: {p: _read_state(root / p) for p in paths})
    return GitSnapshot(root, head, states)


async def changed_files(cwd: Path, before: GitSnapshot) -> list[FileChangeInfo]:
    """Files whose content differs from ``before``: edited, created, deleted or committed."""
    root = before.root
    if root is None:
        return []
    candidates = set(before.dirty) | set(await _dirty_paths(root))
    head = await _head(root)
    if before.head and head and head != before.head:
        candidates |= await _diff_names(root, before.head, head)
    changes: list[FileChangeInfo] = []
    for path in sorted(candidates):
        now = await asyncio.to_thread(_read_state, root / path)
        if path in before.dirty:
            then = before.dirty[path]
        else:
            blob = await _blob(root, before.head, path)
            then = _FileState(_digest(blob), blob)
        if then.digest == now.digest:
            continue
        kind = "create" if then.digest is None else "delete" if now.digest is None else "update"
        insertions, deletions = _line_counts(then, now)
        shown = Path(os.path.relpath(root / path, cwd)).as_posix()
        changes.append(FileChangeInfo(shown, kind, insertions, deletions))
    return changes


async def _git(cwd: Path, *args: str) -> tuple[int, bytes]:
    try:
        proc = await asyncio.create_subprocess_exec(
            "git", *args, cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    except OSError:
        return 127, b""  # git is not installed: nothing can be listed
    out, _ = await proc.communicate()
    return proc.returncode if proc.returncode is not None else 1, out


async def _head(root: Path) -> str | None:
    code, out = await _git(root, "rev-parse", "--verify", "--quiet", "HEAD")
    if code != 0:
        return None  # no commit yet
    return out.decode().strip() or None


async def _dirty_paths(root: Path) -> list[str]:
    # Porcelain paths are relative to the repository root whatever the current folder.
    code, out = await _git(root, "-c", "core.quotepath=off", "status", "--porcelain=v1", "-z",
                           "--untracked-files=all")
    if code != 0:
        return []
    records = out.decode("utf-8", errors="surrogateescape").split("\0")
    paths: list[str] = []
    index = 0
    while index < len(records):
        record = records[index]
        index += 1
        if len(record) < 4:
            continue
        paths.append(record[3:])
        if record[0] in "RC":  # a staged rename or copy: the next record is the source
            paths.append(records[index])
            index += 1
    return paths


async def _diff_names(root: Path, old: str, new: str) -> set[str]:
    code, out = await _git(root, "-c", "core.quotepath=off", "diff", "--name-only", "-z",
                           "--no-renames", old, new)
    if code != 0:
        return set()
    return {p for p in out.decode("utf-8", errors="surrogateescape").split("\0") if p}


async def _blob(root: Path, rev: str | None, path: str) -> bytes | None:
    if rev is None:
        return None
    code, out = await _git(root, "show", f"{rev}:{path}")
    return out if code == 0 else None


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha1(data, usedforsecurity=False).hexdigest()


def _read_state(path: Path) -> _FileState:
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return _FileState(None, None)
    except OSError:
        return _FileState("unreadable", None)
    return _FileState(_digest(data), data if len(data) <= _COUNT_LIMIT else None)


def _line_counts(then: _FileState, now: _FileState) -> tuple[int, int]:
    """(insertions, deletions); 0, 0 for binary files and files too big to keep."""
    old, new = then.content, now.content
    if (then.digest is not None and old is None) or (now.digest is not None and new is None):
        return 0, 0
    if b"\0" in (old or b"") or b"\0" in (new or b""):
        return 0, 0
    a = (old or b"").decode("utf-8", errors="replace").splitlines()
    b = (new or b"").decode("utf-8", errors="replace").splitlines()
    if not a or not b:
        return len(b), len(a)
    insertions = deletions = 0
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            deletions += i2 - i1
        if tag in ("replace", "insert"):
            insertions += j2 - j1
    return insertions, deletions
