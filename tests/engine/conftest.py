"""A real engine over the real backend layer, talking to the scripted model server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentls.devtools.replay.command import ReplayServer
from agentls.engine.events import RecordingFrontend
from agentls.engine.loop.agent import Agent, RunRequest
from agentls.engine.loop.turns import RunResult
from agentls.engine.sessions.store import SessionStore
from agentls.llm.pool import BackendPool
from agentls.settings.config import BackendConfig, CacheConfig, RetryConfig, Settings
from agentls.workspace.fence import Workspace


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "src" / "main.py").write_text("from calc import add\n\nprint(add(1, 2))\n")
    (root / "README.md").write_text("# calc\n")
    return root


@dataclass
class Harness:
    agent: Agent
    store: SessionStore
    root: Path
    server: ReplayServer
    pool: BackendPool

    def session(self, mode: str = "chat") -> str:
        return self.store.create_session(backend="scripted", model="scripted-model",
                                         mode=mode).id  # type: ignore[arg-type]

    async def run(self, prompt: str, *, session_id: str | None = None,
                  frontend: Any = None, **options: Any) -> tuple[RunResult, RecordingFrontend]:
        sid = session_id or self.session()
        front = frontend or RecordingFrontend()
        result = await self.agent.run(sid, RunRequest(prompt, **options), front,
                                      Workspace([self.root]))
        return result, front


def settings_for(server: ReplayServer, **overrides: Any) -> Settings:
    context = overrides.pop("context_max_tokens", 32_000)
    return Settings(
        backend="scripted",
        backends={"scripted": BackendConfig(base_url=server.base_url, model="scripted-model",
                                            api_key_env=None, context_max_tokens=context)},
        cache=CacheConfig(enabled=False),
        retry=RetryConfig(max_retries=0),
        **overrides,
    )


@pytest.fixture
async def harness(server: ReplayServer, project: Path) -> AsyncIterator[Harness]:
    settings = settings_for(server)
    pool = BackendPool(settings)
    store = SessionStore.for_workspace(project)
    yield Harness(Agent(settings, pool, store), store, project, server, pool)
    await pool.aclose()
    store.close()
