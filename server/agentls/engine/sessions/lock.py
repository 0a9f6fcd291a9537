"""One run per session across processes: an exclusive ``flock`` on
``.agentls/locks/<session>.lock`` held while a run uses the session.

The kernel drops the lock when its holder dies (kill -9 included), so a lock is never stale;
the file keeps the holder's pid only to name it in the "session busy" message.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import Callable
from pathlib import Path

from agentls.engine.sessions.state_dir import STATE_DIR, ensure_state_dir

LOCK_DIR = "locks"


class SessionBusy(Exception):
    """Another process runs this session; the message says which and what to do."""


class SessionLock:
    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def acquire(cls, workspace: Path, session_id: str, *, wait: bool,
                notify: Callable[[str], None] | None = None) -> SessionLock:
        """Take the session's lock; when another process holds it, wait for it (``wait``,
        saying so through ``notify``) or raise ``SessionBusy``."""
        ensure_state_dir(workspace)
        directory = workspace / STATE_DIR / LOCK_DIR
        directory.mkdir(exist_ok=True)
        path = directory / f"{session_id}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                if not wait:
                    raise SessionBusy(
                        f"session busy: session {session_id} is in use by another process"
                        f"{holder}") from None
                if notify is not None:
                    notify(f"waiting for session {session_id}: another process{holder} "
                           "is using it")
                fcntl.flock(fd, fcntl.LOCK_EX)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, path)

    @classmethod
    async def acquire_async(cls, workspace: Path, session_id: str,
                            notify: Callable[[str], None], poll_s: float = 0.2) -> SessionLock:
        """For the language server: wait for another process's run on the session without
        blocking the event loop (a cancelled request stops waiting), saying so once."""
        told = False
        while True:
            try:
                # Non-blocking and quick (an open and a flock), so it runs on the loop: taken in
                # a thread, a lock won just as the request was cancelled would be lost, held.
                return cls.acquire(workspace, session_id, wait=False)
            except SessionBusy as exc:
                if not told:
                    told = True
                    notify(f"{exc}; this request starts when that run ends (cancel to stop "
                           "waiting, or start a new session)")
            await asyncio.sleep(poll_s)

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing drops the flock
            self._fd = None


def _holder(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError):
        pid = int(os.pread(fd, 32, 0).decode().strip() or "0")
        if pid > 0:
            return f" (pid {pid})"
    return ""
