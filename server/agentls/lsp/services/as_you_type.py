"""What the as-you-type features (inline completion, next edit) share: their engine part,
loaded once (by the first request, or by the first settings that switch it on, so the clients
learn the status without asking; settings that leave it off tell "off" without loading it:
its imports would compete with a first chat sent right after a restart), each open document's
line index (the client's positions to offsets, without splitting the text), the fence over
the editor's roots (made again after new settings) and the status told to the client (each
change once).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from agentls.base.text_positions import LineStarts
    from agentls.lsp.services.server_context import ServerContext
    from agentls.settings.models import Settings
    from agentls.workspace.fence import Workspace


class OldClient(Protocol):
    async def aclose(self) -> None: ...


class EnginePart(Protocol):
    def use_settings(self, settings: Settings) -> OldClient | None:
        """Follow the settings; return the client used until now (the caller closes it)."""


T = TypeVar("T", bound=EnginePart)


class AsYouType(Generic[T]):
    def __init__(self, server: ServerContext, load: Callable[[], Coroutine[Any, Any, T]],
                 active: Callable[[], bool], status_method: str) -> None:
        self.server = server
        self._load = load
        self._active = active  # the settings switch the feature on
        self._status_method = status_method  # the notification that tells the client
        self._told: tuple[str, str] | None = None
        self._loading: asyncio.Future[T] | None = None
        self._fence: Workspace | None = None
        self.lines: dict[str, LineStarts] = {}

    async def ready(self) -> T:
        """The engine part, loaded on the first call (later calls wait for that load)."""
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._load())
        return await asyncio.shield(self._loading)

    def tell(self, status: str, message: str) -> None:
        """Tell the client the feature's status, unless that is what it was told last ("off"
        before the engine part was loaded, then again by the loaded part)."""
        if (status, message) == self._told:
            return
        self._told = (status, message)
        self.server.protocol.notify(self._status_method, {"status": status, "message": message})

    def follow_settings(self, part: T | None) -> None:
        """New settings. Not before the first settings; while the engine part is not loaded,
        the first ones that switch the feature on start the load (the part follows the
        settings when it is done), others only tell "off"; a loaded part follows them (the
        client it used until now closed) and the fence is made again with the next look."""
        if self.server.resolved is None:
            return
        if part is None:
            if self._loading is None:
                if self._active():
                    self._loading = self.server.spawn(self._load())
                else:
                    self.tell("off", "")
            return
        self._fence = None
        old = part.use_settings(self.server.settings)
        if old is not None:
            self.server.spawn(old.aclose())

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
