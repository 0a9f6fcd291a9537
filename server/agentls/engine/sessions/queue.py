"""One run at a time per session; later requests wait in order, up to a limit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class SessionBusy(Exception):
    """Too many requests are already waiting for this session."""


class SessionQueue:
    def __init__(self, limit: int = 32) -> None:
        self.limit = limit
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiting: dict[str, int] = {}

    def waiting(self, session_id: str) -> int:
        return self._waiting.get(session_id, 0)

    def busy(self, session_id: str) -> bool:
        lock = self._locks.get(session_id)
        return lock is not None and lock.locked()

    @asynccontextmanager
    async def turn(self, session_id: str) -> AsyncIterator[None]:
        """Wait for the session (FIFO: asyncio.Lock wakes waiters in order), then hold it."""
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        if lock.locked() and self.waiting(session_id) >= self.limit:
            raise SessionBusy(
                f"session {session_id} already has {self.limit} requests waiting; "
                "wait for them to finish or start a new session"
            )
        self._waiting[session_id] = self.waiting(session_id) + 1
        try:
            await lock.acquire()
        finally:
            self._waiting[session_id] -= 1
            self._forget_if_idle(session_id, lock)
        try:
            yield
        finally:
            lock.release()
            self._forget_if_idle(session_id, lock)

    def _forget_if_idle(self, session_id: str, lock: asyncio.Lock) -> None:
        # A server lives long and makes a session per chat: drop what no one holds or awaits.
        if not lock.locked() and not self._waiting.get(session_id):
            self._waiting.pop(session_id, None)
            if self._locks.get(session_id) is lock:
                del self._locks[session_id]
