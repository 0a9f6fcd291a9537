"""How the git tools run git: ``git -C <root> --no-pager`` with our config and environment
(``git_prefetch.py``), a timeout, and the output of a command `agentls run` started early
when there is one (taken once)."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Sequence
from pathlib import Path

from agentls.tools.git import prefetch as git_prefetch

GIT_TIMEOUT_SECONDS = 30.0


class GitError(Exception):
    """git could not answer; ``code`` and ``message`` are ready for a tool result."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


async def run_git(root: Path, *args: str, check: bool = True) -> tuple[int, str, str]:
    started = git_prefetch.take(root, args)  # `agentls run` started it while importing
    if started is not None:
        code, out, err = await _finish(started, args)
    else:
        code, out, err = await _spawn(root, args)
    stdout = out.decode("utf-8", errors="replace")
    stderr = err.decode("utf-8", errors="replace").strip()
    if check and code != 0:
        raise GitError("GIT_FAILED", f"git {args[0]} failed: {stderr or f'exit code {code}'}")
    return code, stdout, stderr


async def _spawn(root: Path, args: Sequence[str]) -> tuple[int, bytes, bytes]:
    try:
        process = await asyncio.create_subprocess_exec(
            *git_prefetch.command(root, args),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=git_prefetch.environment(),
        )
    except FileNotFoundError as exc:
        raise GitError(
            "GIT_NOT_FOUND", "git is not installed here, so git tools cannot run."
        ) from exc
    try:
        out, err = await asyncio.wait_for(process.communicate(), GIT_TIMEOUT_SECONDS)
    except TimeoutError as exc:
        process.kill()
        await process.communicate()  # drain the pipes, or wait() would not return
        raise _timeout(args) from exc
    except asyncio.CancelledError:
        process.kill()
        raise
    return process.returncode or 0, out, err


async def _finish(process: subprocess.Popen[bytes], args: Sequence[str]
                  ) -> tuple[int, bytes, bytes]:
    """A prefetched command's output; it has usually exited already."""
    def wait() -> tuple[bytes, bytes]:
        try:
            return process.communicate(timeout=GIT_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise _timeout(args) from None

    if process.poll() is not None:
        out, err = process.communicate()
    else:
        try:
            out, err = await asyncio.to_thread(wait)
        except asyncio.CancelledError:
            process.kill()  # the thread's communicate() then returns
            raise
    return process.returncode or 0, out, err


def _timeout(args: Sequence[str]) -> GitError:
    return GitError("GIT_TIMEOUT", f"git {args[0]} took longer than {GIT_TIMEOUT_SECONDS:g} s.")
