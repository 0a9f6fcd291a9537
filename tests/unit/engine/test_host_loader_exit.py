"""An exit right after a save: the facts refresh waiting for the burst to end is dropped,
so shutting down neither waits for it nor logs its failure."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from agentls.engine import host_loader
from agentls.engine.host_loader import EngineLoader


class Facts:
    def __init__(self) -> None:
        self.refreshed = 0

    async def refresh(self, workspace: Any, *, after_change: bool = False) -> None:
        self.refreshed += 1


def loader(tasks: list[asyncio.Task[Any]]) -> tuple[EngineLoader, Facts]:
    def spawn(coroutine: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coroutine)
        tasks.append(task)
        return task

    async def settings() -> Any:
        raise AssertionError("not needed")

    made = EngineLoader(settings=settings, root=lambda: Path("/nonexistent"),
                        new_workspace=lambda: object(),  # type: ignore[arg-type, return-value]
                        spawn=spawn)
    facts = Facts()
    made._contexts = facts  # type: ignore[assignment]  # gathered once before
    return made, facts


async def test_a_save_then_shutdown_does_not_wait_for_the_refresh(
        caplog: pytest.LogCaptureFixture) -> None:
    tasks: list[asyncio.Task[Any]] = []
    made, facts = loader(tasks)
    made.files_changed()
    assert len(tasks) == 1 and not tasks[0].done()

    started = time.monotonic()
    with caplog.at_level(logging.ERROR):
        await made.aclose()
    assert time.monotonic() - started < host_loader.FACTS_REFRESH_DELAY_S / 2
    assert tasks[0].done() and facts.refreshed == 0
    made.files_changed()  # a save after the shutdown starts nothing
    assert len(tasks) == 1
    assert not caplog.records


async def test_without_a_shutdown_the_refresh_runs_once_per_burst(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_loader, "FACTS_REFRESH_DELAY_S", 0.05)
    tasks: list[asyncio.Task[Any]] = []
    made, facts = loader(tasks)
    made.files_changed()
    made.files_changed()
    await asyncio.wait(tasks)
    assert facts.refreshed == 1
