"""Project facts and workspace instructions (prompt levels 2-3), kept for new sessions.

Gathering them walks the tree and runs git: most of a new session's start on a big
repository. The cache keeps the last gathering per set of roots for ``max_age_s``, and
joins a gathering already under way instead of starting a second one, so an editor can
gather in the background right after start-up (and again when files change) and the first
chat finds them ready or nearly so.
"""

from __future__ import annotations

import asyncio
import functools
import time
from pathlib import Path
from typing import Any

from agentls.engine import context
from agentls.tools.workspace import Workspace

FACTS_MAX_AGE_S = 60.0

ProjectContext = tuple[context.ProjectFacts, context.Instructions]


class ProjectContextCache:
    def __init__(self, max_age_s: float = FACTS_MAX_AGE_S) -> None:
        self.max_age_s = max_age_s
        self._kept: dict[tuple[Path, ...], tuple[float, ProjectContext]] = {}
        self._gathering: dict[tuple[Path, ...], asyncio.Future[ProjectContext]] = {}

    async def get(self, workspace: Workspace) -> ProjectContext:
        """The facts of the last ``max_age_s``, or gathered now."""
        kept = self._kept.get(workspace.roots)
        if kept is not None and time.monotonic() - kept[0] < self.max_age_s:
            return kept[1]
        return await self.refresh(workspace)

    async def refresh(self, workspace: Workspace, *, after_change: bool = False
                      ) -> ProjectContext:
        """Gather them now, joining a gathering under way for the same roots; with
        ``after_change``, one that started before the change is waited out, then another
        starts (it could have missed the change)."""
        roots = workspace.roots
        gathering = self._gathering.get(roots)
        if gathering is not None and after_change:
            await asyncio.wait([gathering])
            gathering = self._gathering.get(roots)
        if gathering is None:
            gathering = asyncio.ensure_future(self._gather(workspace))
            self._gathering[roots] = gathering
            gathering.add_done_callback(functools.partial(self._gathered, roots))
        # Shielded: a cancelled run must not cancel what other runs wait on.
        return await asyncio.shield(gathering)

    def ready(self, workspace: Workspace) -> bool:
        """Whether ``get`` would answer without gathering."""
        kept = self._kept.get(workspace.roots)
        return kept is not None and time.monotonic() - kept[0] < self.max_age_s

    def _gathered(self, roots: tuple[Path, ...], done: asyncio.Future[Any]) -> None:
        if self._gathering.get(roots) is done:
            del self._gathering[roots]
        if not done.cancelled():
            done.exception()  # marked retrieved: its awaiters have it, and there may be none

    async def _gather(self, workspace: Workspace) -> ProjectContext:
        facts, instructions = await asyncio.gather(
            context.build_project_facts(workspace),
            asyncio.to_thread(context.load_instructions, workspace))
        self._kept[workspace.roots] = (time.monotonic(), (facts, instructions))
        return facts, instructions
