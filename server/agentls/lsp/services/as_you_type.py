"""What the as-you-type features (inline completion, next edit) share: their engine part,
loaded once (by the first request, or by the first settings that switch it on, so the clients
learn the status without asking; settings that leave it off tell "off" without loading it:
its imports would compete with a first chat sent right after a restart), each open document's
line index (the client's positions to offsets, without splitting the text) and the fence over
the editor's roots (made again after new settings).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from agentls.base.text_positions import LineStarts
    from agentls.lsp.services.server_context import ServerContext
    from agentls.workspace.fence import Workspace

T = TypeVar("T")


class AsYouType(Generic[T]):
    def __init__(self, server: ServerContext, load: Callable[[], Coroutine[Any, Any, T]],
                 active: Callable[[], bool], told_off: Callable[[], None]) -> None:
        self.server = server
        self._load = load
        self._active = active  # the settings switch the feature on
        self._told_off = told_off  # tells the client "off" without the engine part
        self._loading: asyncio.Future[T] | None = None
        self._fence: Workspace | None = None
        self.lines: dict[str, LineStarts] = {}

    async def ready(self) -> T:
        """The engine part, loaded on the first call (later calls wait for that load)."""
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._load())
        return await asyncio.shield(self._loading)

    def new_settings(self, loaded: bool) -> bool:
        """New settings: whether the engine part should follow them now. Not before the first
        settings; the first ones that switch the feature on start the load (which follows
        them when it is done), others only tell "off"; the fence is made again with the next
        look."""
        if self.server.resolved is None:
            return False
        if not loaded:
            if self._loading is None:
                if self._active():
                    self._loading = self.server.spawn(self._load())
                else:
                    self._told_off()
            return False
        self._fence = None
        return True

    def index(self, uri: str) -> LineStarts:
        index = self.lines.get(uri)
        if index is None:
            from agentls.base.text_positions import LineStarts

            index = self.lines[uri] = LineStarts()
        return index

    def visible(self, path: Path) -> bool:
        if self._fence is None:
            from agentls.workspace.fence import Workspace

            roots = self.server.roots
            if not roots:
                return True  # no folder open: no fence to keep, only the editor's buffers
            self._fence = Workspace(roots)
        return self._fence.is_visible(path)
