"""ChatRateLimiter: a sliding minute, first come first served, a cap on waiters."""

from __future__ import annotations

import asyncio

import pytest

from agentls.lsp.services.rate_limit import ChatRateLimiter, RateLimitFull


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_requests_within_the_rate_start_at_once() -> None:
    clock = Clock()
    limiter = ChatRateLimiter(3, clock=clock)
    waits: list[float] = []
    for _ in range(3):
        await limiter.admit(waits.append)
    assert waits == []
    assert limiter.delay() == 60.0


async def test_the_window_slides() -> None:
    clock = Clock()
    limiter = ChatRateLimiter(2, clock=clock)
    await limiter.admit()
    clock.now += 40
    await limiter.admit()
    assert limiter.delay() == pytest.approx(20.0)  # the first start leaves the window at +60
    clock.now += 20
    assert limiter.delay() == 0.0


async def test_a_request_beyond_the_rate_waits_and_is_told_how_long() -> None:
    clock = Clock()
    limiter = ChatRateLimiter(1, clock=clock)
    await limiter.admit()
    told: list[float] = []
    waiting = asyncio.create_task(limiter.admit(told.append))
    await asyncio.sleep(0)  # let it reach its wait
    assert told == [60.0] and not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_a_full_waiting_line_refuses_with_a_retry_time() -> None:
    clock = Clock()
    limiter = ChatRateLimiter(1, max_waiting=1, clock=clock)
    await limiter.admit()
    first = asyncio.create_task(limiter.admit())
    await asyncio.sleep(0)
    with pytest.raises(RateLimitFull) as refused:
        await limiter.admit()
    assert refused.value.retry_after >= 60
    assert "retry in about" in str(refused.value)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
