"""A cap on chat requests per minute for one client (seed 002, "Rate Limiting").

A sliding window of start times: a request beyond the cap waits, first come first served,
until a slot of the last minute frees up. The window only counts requests that started.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable

WINDOW_S = 60.0


class RateLimitFull(Exception):
    """Too many requests already wait for the rate limit."""

    def __init__(self, waiting: int, retry_after: float) -> None:
        super().__init__(
            f"{waiting} chat requests are already waiting for the rate limit; retry in about "
            f"{math.ceil(retry_after)} s"
        )
        self.retry_after = retry_after


class ChatRateLimiter:
    def __init__(self, per_minute: int, *, max_waiting: int = 32,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.max_waiting = max_waiting
        self._clock = clock
        self._starts: deque[float] = deque()
        self._fifo = asyncio.Lock()  # wakes waiters in arrival order
        self._waiting = 0

    def delay(self) -> float:
        """Seconds until a request arriving now may start (0 when there is room)."""
        now = self._clock()
        while self._starts and self._starts[0] <= now - WINDOW_S:
            self._starts.popleft()
        if len(self._starts) < self.per_minute:
            return 0.0
        return max(0.0, self._starts[-self.per_minute] + WINDOW_S - now)

    def retry_after(self) -> float:
        """A fair guess at when a refused request should come back."""
        queued = self._waiting + 1
        return max(self.delay(), WINDOW_S * queued / max(self.per_minute, 1))

    async def admit(self, on_wait: Callable[[float], None] | None = None) -> None:
        """Return when this request may start; ``on_wait(seconds)`` says it has to wait."""
        if self._waiting >= self.max_waiting:
            raise RateLimitFull(self._waiting, self.retry_after())
        self._waiting += 1
        try:
            async with self._fifo:
                delay = self.delay()
                if delay > 0:
                    if on_wait is not None:
                        on_wait(delay)
                    await asyncio.sleep(delay)
                self._starts.append(self._clock())
        finally:
            self._waiting -= 1
