"""The engine behind a front door (the LSP server, the ACP agent): one Agent, its session
store and its backend pool. Front-ends are siblings (DESIGN.md decision 14), so it lives here.

Built on the first request that needs a model (importing the engine pulls in ``openai``, and
the store opens ``.agentls/state.db``), never at start-up. The store is the workspace's
``state.db``, the same file the CLI uses, so sessions are shared.
"""

from __future__ import annotations

from pathlib import Path

from agentls.engine.loop.agent import Agent
from agentls.engine.prompt.levels_cache import ProjectContextCache
from agentls.engine.sessions.store import SessionStore
from agentls.llm.pool import BackendPool
from agentls.settings.config import Settings


class EngineHost:
    def __init__(self, settings: Settings, root: Path,
                 project_contexts: ProjectContextCache | None = None) -> None:
        self.root = root
        self.store = SessionStore.for_workspace(root)
        self.pool = BackendPool(settings)
        self.agent = Agent(settings, self.pool, self.store, project_contexts=project_contexts)
        self._retired: list[BackendPool] = []

    def update(self, settings: Settings) -> None:
        """New settings for the runs that start from now on; running ones keep their backend
        client, whose pool is closed once nothing runs (``close_retired``)."""
        if settings == self.agent.settings:
            return
        self._retired.append(self.pool)
        self.pool = BackendPool(settings)
        self.agent.settings = settings
        self.agent.backends = self.pool

    async def close_retired(self) -> None:
        retired, self._retired = self._retired, []
        for pool in retired:
            await pool.aclose()

    async def aclose(self) -> None:
        await self.agent.aclose()
        await self.close_retired()
        await self.pool.aclose()
        self.store.close()
