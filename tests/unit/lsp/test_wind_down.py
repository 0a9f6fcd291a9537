"""After exit the server cancels what still runs and waits a bounded time
(lsp/transport/wind_down.py):
a task that ignores its cancellation is named in the log instead of holding the process."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agentls.lsp.transport.wind_down import wind_down


async def test_tasks_that_stop_when_cancelled_are_waited_for() -> None:
    stopped = []

    async def background() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            stopped.append(True)

    task = asyncio.create_task(background(), name="background-work")
    await asyncio.sleep(0)
    assert await wind_down(5)
    assert stopped == [True] and task.cancelled()


async def test_a_task_that_ignores_cancellation_is_named_not_waited_for_forever(
        caplog: pytest.LogCaptureFixture) -> None:
    release = asyncio.Event()

    async def stubborn() -> None:
        while not release.is_set():
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                continue  # the kind of bug that held a server after exit

    task = asyncio.create_task(stubborn(), name="stubborn-task")
    await asyncio.sleep(0)
    with caplog.at_level(logging.ERROR, logger="agentls.lsp.transport.wind_down"):
        assert not await wind_down(0.2)
    (record,) = [r for r in caplog.records if "stubborn-task" in r.getMessage()]
    assert "did not stop within 0.2 s of the exit" in record.getMessage()
    assert "stubborn" in record.getMessage()  # where it waits: its stack
    release.set()
    task.cancel()
    await asyncio.wait([task], timeout=5)
