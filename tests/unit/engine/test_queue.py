"""The per-session queue: FIFO turns, a bound on waiters, nothing kept for idle sessions."""

from __future__ import annotations

import asyncio

import pytest

from agentls.engine.sessions.queue import SessionBusy, SessionQueue


async def test_turns_run_in_arrival_order_and_idle_sessions_are_forgotten() -> None:
    queue = SessionQueue(limit=8)
    order: list[int] = []
    release = asyncio.Event()

    async def turn(n: int) -> None:
        async with queue.turn("s"):
            order.append(n)
            await release.wait()

    tasks = [asyncio.create_task(turn(n)) for n in range(4)]
    while queue.waiting("s") < 3:
        await asyncio.sleep(0)
    assert queue.busy("s") and order == [0]
    release.set()
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2, 3]
    # A long-lived server makes a session per chat: an idle one leaves nothing behind.
    assert queue._locks == {} and queue._waiting == {}
    assert not queue.busy("s") and queue.waiting("s") == 0


async def test_a_full_queue_refuses_and_a_cancelled_waiter_leaves_no_trace() -> None:
    queue = SessionQueue(limit=1)
    hold = asyncio.Event()

    async def holder() -> None:
        async with queue.turn("s"):
            await hold.wait()

    first = asyncio.create_task(holder())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(holder())
    while queue.waiting("s") < 1:
        await asyncio.sleep(0)
    with pytest.raises(SessionBusy):
        async with queue.turn("s"):
            pass
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    assert queue.waiting("s") == 0 and queue.busy("s")
    hold.set()
    await first
    assert queue._locks == {} and queue._waiting == {}
