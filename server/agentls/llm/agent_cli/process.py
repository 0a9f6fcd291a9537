"""Running an agent CLI as a child process: a scrubbed environment, its own process group,
a stop that ends everything it started, and stdout/stderr read as they come.

What the adapters in external_cli.py share; the secrets rule the environment follows is
described there (DESIGN.md decision 10).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
import subprocess
from collections.abc import Iterable, Mapping
from typing import Any

from agentls.llm.agent_cli.parse_output import CliOutput

_STDOUT_LINE_LIMIT = 32 * 1024 * 1024  # a command's whole output can sit in one JSONL line
_STDERR_TAIL = 16 * 1024
_GRACE_S = 2.0  # after SIGTERM, before SIGKILL

_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


def child_environment(
    env: Mapping[str, str], *, keep: Iterable[str] = (), ours: Iterable[str] = ()
) -> dict[str, str]:
    """``env`` without secrets and agentls settings; ``keep`` names come back unless ours."""
    ours_upper = {name.upper() for name in ours if name}
    child = {
        name: value
        for name, value in env.items()
        if not name.upper().startswith("AGENTLS_")
        and name.upper() not in ours_upper
        and not any(word in name.upper() for word in _SECRET_WORDS)
    }
    for name in keep:
        if name.upper() not in ours_upper and name in env:
            child[name] = env[name]
    return child


# --- processes ----------------------------------------------------------------------------------


def group_kwargs() -> dict[str, Any]:
    if os.name == "posix":
        return {"start_new_session": True}
    return {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}


async def stop(proc: asyncio.subprocess.Process, *, graceful: bool = True) -> None:
    """Stop the CLI and its children: SIGTERM to the group, SIGKILL if it lingers (at once
    when not ``graceful``)."""
    if proc.returncode is not None:
        return
    if os.name != "posix":
        # taskkill /T ends the whole tree (npm's .cmd shim, node, its children).
        killer = await asyncio.create_subprocess_exec(
            "taskkill", "/T", "/F", "/PID", str(proc.pid),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        await killer.wait()
        await proc.wait()
        return
    for sig in (signal.SIGTERM, signal.SIGKILL) if graceful else (signal.SIGKILL,):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            await asyncio.wait_for(proc.wait(), _GRACE_S)
            return
        except TimeoutError:
            continue


async def spawn(argv: list[str], cwd: str | None, env: Mapping[str, str], *,
                 stdin: bytes | None) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=_STDOUT_LINE_LIMIT,
        **group_kwargs(),
    )


async def quick(argv: list[str], env: Mapping[str, str], timeout: float
                 ) -> tuple[int | None, str]:
    """Run a short check; (exit code or None on timeout, stdout + stderr)."""
    proc = await spawn(argv, None, env, stdin=None)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        await stop(proc, graceful=False)
        return None, ""
    except BaseException:
        await stop(proc, graceful=False)
        raise
    text = (out + b"\n" + err).decode("utf-8", errors="replace").strip()
    return proc.returncode, text


# --- stream plumbing ----------------------------------------------------------------------------


async def feed_stdin(proc: asyncio.subprocess.Process, data: bytes | None) -> None:
    if data is None or proc.stdin is None:
        return
    try:
        proc.stdin.write(data)
        await proc.stdin.drain()
        proc.stdin.close()
        await proc.stdin.wait_closed()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the CLI exited without reading its prompt; its exit code says why


async def read_stdout(proc: asyncio.subprocess.Process, output: CliOutput, json_lines: bool
                       ) -> None:
    assert proc.stdout is not None
    if json_lines:
        while True:
            try:
                line = await proc.stdout.readline()
            except ValueError:
                continue  # a line over the limit was dropped; the next one is whole
            if not line:
                return
            output.feed_line(line.decode("utf-8", errors="replace"))
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while chunk := await proc.stdout.read(4096):
        output.feed_chunk(decoder.decode(chunk))
    output.feed_chunk(decoder.decode(b"", final=True))


async def read_stderr(proc: asyncio.subprocess.Process, tail: bytearray) -> None:
    assert proc.stderr is not None
    while chunk := await proc.stderr.read(4096):
        tail.extend(chunk)
        del tail[:-_STDERR_TAIL]
