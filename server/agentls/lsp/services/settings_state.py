"""The editor settings' life on the server: loaded once after ``initialize`` (or as soon as a
request needs them), the client section handed out as soon as it is fetched, reloaded on
``workspace/didChangeConfiguration``, and each reload applied to the listeners.

One part of the ``ServerContext`` (lsp/services/server_context.py), implemented here so the
composition root
(lsp/server.py) only composes. Fetching, validating and reporting the settings is
lsp/services/editor_settings.py; the records are lsp/services/resolved_settings.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agentls.lsp.services import editor_settings as lsp_settings
from agentls.lsp.services.server_context import ServerContext

if TYPE_CHECKING:
    from agentls.lsp.services.resolved_settings import ResolvedSettings
    from agentls.settings.config import Settings

log = logging.getLogger(__name__)


class SettingsState(ServerContext):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initialization_options: Any = None
        self.pushed_settings: Mapping[str, Any] | None = None  # didChangeConfiguration push
        self.reported_settings_problems = ""
        self.resolved: ResolvedSettings | None = None
        self.fetched_client: dict[str, Any] | None = None
        self._client_fetched = asyncio.Event()
        self.settings_listeners: list[Callable[[], None]] = []  # called after each reload
        self._settings_task: asyncio.Task[ResolvedSettings] | None = None

    async def ready(self) -> ResolvedSettings:
        """The settings, loaded once after ``initialize`` (or now, if a request came first)."""
        return await asyncio.shield(self._settings_loading())

    def _settings_loading(self) -> asyncio.Task[ResolvedSettings]:
        """The first load of the settings, started if it has not been."""
        if self._settings_task is None:
            self._settings_task = asyncio.create_task(lsp_settings.reload(self))
        return self._settings_task

    async def client_section(self) -> dict[str, Any]:
        """The ``agentls`` section as the client sent it, as soon as it is fetched: before
        the engine settings are built from it (which imports pydantic and the settings
        models, ~60 ms after start-up). For features that read only their own keys."""
        self._settings_loading()
        await self._client_fetched.wait()
        assert self.fetched_client is not None
        return self.fetched_client

    def client_fetched(self, client: dict[str, Any]) -> None:
        self.fetched_client = client
        self._client_fetched.set()

    async def reload_settings(self) -> ResolvedSettings:
        previous = self._settings_task
        if previous is not None and not previous.done():
            await asyncio.wait([previous])
        self._settings_task = asyncio.create_task(lsp_settings.reload(self))
        return await asyncio.shield(self._settings_task)

    def apply_settings(self, resolved: ResolvedSettings) -> None:
        self.resolved = resolved
        for listener in list(self.settings_listeners):
            try:
                listener()
            except Exception:  # one feature's failure must not stop the others' update
                log.exception("a settings listener failed")

    @property
    def settings(self) -> Settings:
        """The engine settings; only valid once ``await ready()`` has returned."""
        if self.resolved is None:
            raise RuntimeError("settings are not loaded yet: await ls.ready() first")
        return self.resolved.settings

    @property
    def client_settings(self) -> dict[str, Any]:
        """The ``agentls`` section as the client sent it (features read their own keys); the
        one fetched while it is being resolved, ``{}`` before."""
        if self.resolved is not None:
            return self.resolved.client
        return self.fetched_client or {}
