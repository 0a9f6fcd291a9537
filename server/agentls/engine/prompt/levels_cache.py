"""Project facts and workspace instructions (prompt levels 2-3), kept for new sessions.

Gathering them walks the tree and runs git: most of a new session's start on a big
repository. The cache keeps the last gathering per set of roots for ``max_age_s``, and
joins a gathering already under way instead of starting a second one, so an editor can
gather in the background right after start-up (and again when files change) and the first
chat finds them ready or nearly so. The first gathering of a process reuses the facts
stored by an earlier one when nothing they came from has changed (``facts_store``), and
every gathering stores what it found for the next.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from pathlib import Path
from typing import Any

from agentls.engine.prompt import facts_store
from agentls.engine.prompt import levels as context
from agentls.workspace.fence import Workspace

log = logging.getLogger(__name__)

FACTS_MAX_AGE_S = 60.0

ProjectContext = tuple[context.ProjectFacts, context.Instructions]


class ProjectContextCache:
    def __init__(self, max_age_s: float = FACTS_MAX_AGE_S) -> None:
        self.max_age_s = max_age_s
        self._kept: dict[tuple[Path, ...], tuple[float, ProjectContext]] = {}
        self._gathering: dict[tuple[Path, ...], asyncio.Future[ProjectContext]] = {}
        self._saving: set[asyncio.Future[bool]] = set()

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
        stored = None
        # First in this process: the stored ones, if there is a store (one stat, no thread).
        if workspace.roots not in self._kept and facts_store.store_path(workspace).is_file():
            stored = await asyncio.to_thread(facts_store.load, workspace)
        if stored is not None:
            facts = stored
            instructions = await asyncio.to_thread(context.load_instructions, workspace)
        else:
            facts, instructions = await asyncio.gather(
                context.build_project_facts(workspace),
                asyncio.to_thread(context.load_instructions, workspace))
        self._kept[workspace.roots] = (time.monotonic(), (facts, instructions))
        if stored is None:
            # Stored for the next process while the facts are used: nobody waits on it.
            saving = asyncio.ensure_future(asyncio.to_thread(facts_store.save, workspace, facts))
            self._saving.add(saving)
            saving.add_done_callback(self._saved)
        return facts, instructions

    def _saved(self, done: asyncio.Future[bool]) -> None:
        self._saving.discard(done)
        if not done.cancelled() and done.exception() is not None:
            log.error("project facts not stored", exc_info=done.exception())
