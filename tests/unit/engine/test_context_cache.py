"""The project facts kept for new sessions: one gathering at a time, fresh after a change."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentls.engine.prompt import levels as context
from agentls.engine.prompt.levels import ProjectFacts
from agentls.engine.prompt.levels_cache import ProjectContextCache
from agentls.workspace.fence import Workspace


@pytest.fixture
def gatherings(monkeypatch: pytest.MonkeyPatch) -> list[asyncio.Event]:
    """Each gathering of the facts, as an event the test sets to let it finish."""
    started: list[asyncio.Event] = []
    real = context.build_project_facts

    async def held(workspace: Workspace) -> ProjectFacts:
        release = asyncio.Event()
        started.append(release)
        await release.wait()
        return await real(workspace)

    monkeypatch.setattr(context, "build_project_facts", held)
    return started


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_callers_during_a_gathering_join_it(tmp_path: Path,
                                                  gatherings: list[asyncio.Event]) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    cache = ProjectContextCache()
    ws = Workspace([tmp_path])
    background = asyncio.create_task(cache.refresh(ws))  # an editor, right after start-up
    await settle()
    first_chat = asyncio.create_task(cache.get(Workspace([tmp_path])))
    await settle()
    assert len(gatherings) == 1 and not cache.ready(ws)
    gatherings[0].set()
    (facts, _), (same, _) = await asyncio.gather(background, first_chat)
    assert facts is same and "app.py" in facts.render()
    assert cache.ready(ws)
    again, _ = await cache.get(ws)
    assert again is facts and len(gatherings) == 1


async def test_a_cancelled_caller_does_not_cancel_the_gathering(
        tmp_path: Path, gatherings: list[asyncio.Event]) -> None:
    cache = ProjectContextCache()
    ws = Workspace([tmp_path])
    cancelled = asyncio.create_task(cache.get(ws))
    await settle()
    waiting = asyncio.create_task(cache.get(ws))
    await settle()
    cancelled.cancel()
    gatherings[0].set()
    facts, _ = await waiting
    assert facts.roots[0].root == tmp_path and len(gatherings) == 1


async def test_a_change_during_a_gathering_starts_another_after_it(
        tmp_path: Path, gatherings: list[asyncio.Event]) -> None:
    cache = ProjectContextCache()
    ws = Workspace([tmp_path])
    before = asyncio.create_task(cache.refresh(ws))
    await settle()
    (tmp_path / "added.py").write_text("y = 2\n")
    after = asyncio.create_task(cache.refresh(ws, after_change=True))
    await settle()
    gatherings[0].set()
    await settle()
    await before
    while len(gatherings) < 2:
        await asyncio.sleep(0.01)
    gatherings[1].set()
    facts, _ = await after
    assert "added.py" in facts.render()
    latest, _ = await cache.get(ws)
    assert latest is facts


async def test_facts_older_than_the_limit_are_gathered_again(
        tmp_path: Path, gatherings: list[asyncio.Event]) -> None:
    cache = ProjectContextCache(max_age_s=0.0)
    ws = Workspace([tmp_path])
    first = asyncio.create_task(cache.get(ws))
    await settle()
    gatherings[0].set()
    await first
    assert not cache.ready(ws)
    second = asyncio.create_task(cache.get(ws))
    await settle()
    gatherings[1].set()
    await second
    assert len(gatherings) == 2
