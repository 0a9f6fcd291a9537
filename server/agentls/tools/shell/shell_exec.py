"""shell_exec: run a command in the workspace, bounded in time and output, without secrets.

The command runs under bash (or /bin/sh) in its own process group, so a timeout or a
cancelled run stops everything it started. Processes it leaves in the background are
stopped when it finishes. The permission check happens before this is called.

A ``kill -9`` of AgentLS leaves nothing running (issue 38): on Linux the command starts under
a small ``sh`` that gets SIGUSR2 the moment AgentLS dies (``PR_SET_PDEATHSIG``, set by
``setpriv`` before it execs the shell, then checked against a parent already gone) and answers
it by killing its whole process group. That group holds bwrap and the sandbox's pid-1 bwrap
(started here, bwrap runs without ``--new-session``: ``Launch.local_argv``), so the pid
namespace ends and with it everything inside. bwrap's own ``--die-with-parent`` is not enough
alone: the sandbox's pid 1 sets it a few milliseconds after it starts, and a parent killed in
that window left the sandbox running.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentls.tools.output import DEFAULT_SHELL_OUTPUT_LIMIT, fail, ok, truncate_middle
from agentls.workspace.fence import FenceError

if TYPE_CHECKING:
    from agentls.workspace.fence import Workspace

MIN_TIMEOUT = 1.0
MAX_TIMEOUT = 600.0
DEFAULT_OUTPUT_LIMIT = DEFAULT_SHELL_OUTPUT_LIMIT
SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
# How long processes get between SIGTERM and SIGKILL, and pipes to close after the exit.
_GRACE_SECONDS = 2.0
_READ_CHUNK = 65_536
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


@dataclass(frozen=True)
class Launch:
    """How to start a command another way (in a sandbox): the full argv, its environment,
    the folder to start in, and a hook run in the child before exec (resource limits)."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    preexec: Callable[[], None] | None = None
    # The argv when AgentLS starts it itself (in a new session, without a terminal), if it
    # differs from the one an editor's terminal runs.
    local_argv: list[str] | None = None


Launcher = Callable[[list[str], Path], Launch]
"""Turns the plain shell argv and working folder into a Launch."""


@dataclass(frozen=True)
class ExternalRun:
    """What a command someone else ran (the editor's terminal, ACP) gave back: stdout and
    stderr as one text, as a terminal shows them."""

    exit_code: int | None
    signal: str | None
    output: str
    timed_out: bool
    notes: list[str] = field(default_factory=list)


COMBINED_NOTE = "stdout and stderr are one text here (run in the editor's terminal)"

CommandRunner = Callable[[Launch, float, int], Awaitable[ExternalRun | None]]
"""Runs a Launch elsewhere within the timeout (s), keeping about the output limit (chars);
None: it could not, so shell_exec runs the command itself. The Launch must not need a
``preexec`` hook (nobody else can run it)."""


async def shell_exec(
    ws: Workspace,
    command: str,
    cwd: str | None = None,
    timeout: float = 30,
    *,
    api_key_env: str = "OPENAI_API_KEY",
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    launcher: Launcher | None = None,
    runner: CommandRunner | None = None,
) -> dict[str, Any]:
    """Run ``command`` with ``cwd`` inside the workspace (default: the first root).

    ``timeout`` is clamped to 1..600 seconds; a clamped value is reported in ``notes``.
    stdout and stderr each keep their first and last ``output_limit`` characters.
    A timeout is a failed result (`TIMEOUT`) that still carries the output so far.
    ``launcher`` starts the command another way (``agentls.tools.shell.sandboxed``);
    ``runner`` has someone else run that launch (the editor's terminal), the same argv.
    """
    if not command.strip():
        return fail("EMPTY_COMMAND", "The command is empty. Pass the shell command to run.")
    try:
        directory, shown_cwd = _working_directory(ws, cwd)
    except FenceError as exc:
        return fail(exc.code, exc.message)
    if directory is None:
        return fail(
            "NOT_A_DIRECTORY",
            f"cwd {cwd!r} is not a folder of the workspace (it does not exist, or is a file). "
            "Pass a folder, or omit cwd to run in the workspace root.",
        )
    limit, notes = _clamp_timeout(timeout)
    argv = [_shell(), "-c", command]
    launch = (launcher(argv, directory) if launcher is not None else
              Launch(argv, scrubbed_environment(os.environ, api_key_env), directory))
    started = time.monotonic()
    if runner is not None and launch.preexec is None:
        ran = await runner(launch, limit, output_limit)
        if ran is not None:
            notes += [COMBINED_NOTE, *ran.notes]
            result = _result(command, shown_cwd, ran.exit_code, ran.timed_out, started, limit,
                             truncate_middle(ran.output, 2 * output_limit), "", notes)
            if ran.signal:
                result["signal"] = ran.signal
            return result
    spawned = await _spawn(launch, output_limit)
    if isinstance(spawned, str):
        return fail("SPAWN_FAILED", f"The shell could not be started: {spawned}.")
    process, stdout, stderr = spawned
    timed_out = await _wait_and_collect(process, stdout, stderr, limit, notes)
    return _result(command, shown_cwd, process.returncode, timed_out, started, limit,
                   stdout.text.text(), stderr.text.text(), notes)


_Spawned = tuple[asyncio.subprocess.Process, "_PipeReader", "_PipeReader"]

# The supervisor. setpriv sets PR_SET_PDEATHSIG (SIGUSR2) and execs sh, which gives up if
# AgentLS died before that (its parent is no longer AgentLS), and on SIGUSR2 kills its process
# group, itself included. No preexec_fn: the child is spawned without a fork of AgentLS's
# whole memory (Python forks for a preexec_fn; ~30 ms in an engine-sized process).
_SUPERVISE = 'trap "kill -KILL 0" USR2; [ "$PPID" = "$1" ] || exit 137; shift; "$@" & wait $!'


def _supervised(launch: Launch) -> list[str]:
    """The argv that ends the command with AgentLS (the module's docstring)."""
    argv = launch.local_argv or launch.argv
    setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    if setpriv is None or not os.path.exists("/bin/sh"):
        return argv
    return [setpriv, "--pdeathsig", "USR2", "--", "/bin/sh", "-c", _SUPERVISE, "agentls-command",
            str(os.getpid()), *argv]


async def _spawn(launch: Launch, output_limit: int) -> _Spawned | str:
    """The process with readers on its stdout and stderr, or why it could not start.
    Our own pipes, not asyncio's: Python 3.11's Process.wait() would wait for every process
    holding them, and a detached background process may hold them forever."""
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    argv = _supervised(launch)
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=launch.cwd,
            env=launch.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out_write,
            stderr=err_write,
            start_new_session=True,
            preexec_fn=launch.preexec,
        )
    except OSError as exc:
        os.close(out_read)
        os.close(err_read)
        return str(exc)
    finally:
        os.close(out_write)
        os.close(err_write)
    return process, _PipeReader(out_read, output_limit), _PipeReader(err_read, output_limit)


async def _wait_and_collect(process: asyncio.subprocess.Process, stdout: _PipeReader,
                            stderr: _PipeReader, limit: float, notes: list[str]) -> bool:
    """Wait up to ``limit`` s, then stop the process group and read the pipes to their end
    (a short grace for a detached process holding them); True when it timed out. Cancelled,
    it leaves nothing running."""
    timed_out = False
    try:
        try:
            await asyncio.wait_for(process.wait(), limit)
        except TimeoutError:
            timed_out = True
        await _stop_group(process.pid)
        await process.wait()
        _, open_pipes = await asyncio.wait([stdout.eof, stderr.eof], timeout=_GRACE_SECONDS)
        if open_pipes:
            notes.append("a detached process kept the output open; output may be incomplete")
    except BaseException:  # cancelled (or a bug): leave nothing running
        _kill_group(process.pid, signal.SIGKILL)
        raise
    finally:
        stdout.close()
        stderr.close()
    return timed_out


def _result(command: str, shown_cwd: str, returncode: int | None, timed_out: bool,
            started: float, limit: float, stdout: str, stderr: str,
            notes: list[str]) -> dict[str, Any]:
    """The tool's answer: ok, or TIMEOUT with the output so far."""
    result: dict[str, Any] = {
        "command": command,
        "cwd": shown_cwd,
        "exit_code": returncode,
        "timed_out": timed_out,
        "duration_s": round(time.monotonic() - started, 3),
        "stdout": stdout,
        "stderr": stderr,
    }
    if returncode is not None and returncode < 0:
        number = -returncode
        result["signal"] = (
            signal.Signals(number).name if number in signal.valid_signals() else str(number)
        )
    if notes:
        result["notes"] = notes
    if timed_out:
        return fail(
            "TIMEOUT",
            f"The command did not finish within {limit:g} s and was stopped with every process "
            f"it started. Output so far is included. Run something shorter, or pass a larger "
            f"timeout (at most {MAX_TIMEOUT:g} s).",
            **result,
        )
    return ok(**result)


def scrubbed_environment(environ: Mapping[str, str], api_key_env: str) -> dict[str, str]:
    """``environ`` without API keys, tokens, secrets and passwords."""
    return {
        name: value
        for name, value in environ.items()
        if name != api_key_env and not any(m in name.upper() for m in SECRET_MARKERS)
    }


def _working_directory(ws: Workspace, cwd: str | None) -> tuple[Path | None, str]:
    if cwd is None or cwd.strip() in ("", "."):
        return ws.roots[0], "."
    target = ws.resolve(cwd)
    if not ws.is_dir(target):
        return None, target.display
    return target.abs, target.display


def _clamp_timeout(timeout: float) -> tuple[float, list[str]]:
    if timeout > MAX_TIMEOUT:
        return MAX_TIMEOUT, [f"timeout {timeout:g} s is above the maximum; used {MAX_TIMEOUT:g} s"]
    if not timeout >= MIN_TIMEOUT:  # also catches NaN
        return MIN_TIMEOUT, [f"timeout {timeout:g} s is below the minimum; used {MIN_TIMEOUT:g} s"]
    return float(timeout), []


def _shell() -> str:
    return shutil.which("bash") or "/bin/sh"


def _kill_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the group; False when no process of it is left."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def _stop_group(pgid: int) -> None:
    """SIGTERM the whole group, then SIGKILL whatever is still there after a short grace.
    A group already ended (a command that left nothing behind) costs no wait at all."""
    if not _group_has_live_process(pgid) or not _kill_group(pgid, signal.SIGTERM):
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _GRACE_SECONDS
    pause = 0.002  # most groups are gone at once: look again soon, then every 20 ms
    while loop.time() < deadline:
        await asyncio.sleep(pause)
        pause = 0.02
        if not _group_has_live_process(pgid):
            return
    _kill_group(pgid, signal.SIGKILL)


def _group_has_live_process(pgid: int) -> bool:
    """Zombies count as gone: without a reaping init they can linger after they died."""
    if not _kill_group(pgid, 0):
        return False
    proc = "/proc"
    if not os.path.isdir(proc):
        return True
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state, ppid, pgrp.
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


class _CappedText:
    """Collects a stream keeping only its head and tail, so huge output costs no memory."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        # UTF-8 needs at most 4 bytes per character; a limit <= 0 keeps everything.
        self._cap = 4 * limit if limit > 0 else sys.maxsize
        self._head = bytearray()
        self._tail = bytearray()
        self._chars_dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self._cap - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail += chunk
        excess = len(self._tail) - self._cap
        if excess > 0:
            dropped = bytes(self._tail[:excess])
            # Count characters, not bytes: continuation bytes start no character.
            self._chars_dropped += len(dropped.translate(None, _CONTINUATION_BYTES))
            del self._tail[:excess]

    def text(self) -> str:
        if not self._chars_dropped:
            whole = (self._head + self._tail).decode("utf-8", errors="replace")
            return truncate_middle(whole, 2 * self.limit)
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        omitted = self._chars_dropped + max(0, len(head) - self.limit)
        omitted += max(0, len(tail) - self.limit)
        kept_tail = tail[len(tail) - self.limit :] if self.limit else ""
        return f"{head[: self.limit]}\n[... {omitted} characters omitted ...]\n{kept_tail}"


class _PipeReader:
    """Reads a pipe from the event loop into a _CappedText; can be closed at any time."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd = fd
        self.text = _CappedText(limit)
        self._loop = asyncio.get_running_loop()
        self.eof: asyncio.Future[None] = self._loop.create_future()
        self._open = True
        os.set_blocking(fd, False)
        self._loop.add_reader(fd, self._on_readable)

    def _on_readable(self) -> None:
        try:
            data = os.read(self.fd, _READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self.text.add(data)
        else:
            self.close()

    def close(self) -> None:
        if not self._open:
            return
        self._open = False
        self._loop.remove_reader(self.fd)
        os.close(self.fd)
        if not self.eof.done():
            self.eof.set_result(None)
