"""What a feature module may use from the server: the typed context every feature depends on.

Feature modules (chat, code_actions, git_commands ...) are leaves: they take a
``ServerContext`` (pygls's ``LanguageServer`` plus the AgentLS state below) and register their
handlers with ``setup(server)``. Its parts are implemented one job per module: the workspace
folders in ``workspace_roots.py``, the settings' life in ``settings_state.py``; ``server.py``
is the composition root: it joins them (``AgentLanguageServer``, with the run manager and the
engine loader) and calls each feature's ``setup``; no feature imports it.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pygls.lsp.server import LanguageServer

if TYPE_CHECKING:
    import asyncio

    from agentls.engine.host import EngineHost
    from agentls.lsp.services.resolved_settings import ResolvedSettings
    from agentls.lsp.services.turn import Runs
    from agentls.settings.config import Settings
    from agentls.workspace.fence import Workspace


class ServerContext(LanguageServer):
    """The server as features see it; ``lsp.server.AgentLanguageServer`` implements it."""

    initialization_options: Any
    pushed_settings: Mapping[str, Any] | None  # didChangeConfiguration push
    reported_settings_problems: str
    resolved: ResolvedSettings | None
    fetched_client: dict[str, Any] | None  # the section as last fetched, before it resolves
    settings_listeners: list[Callable[[], None]]  # called after each reload
    file_listeners: list[Callable[[list[str]], None]]  # called with saved/changed file URIs
    # called after pygls applied a didOpen / didChange / didClose (lsp/services/documents.py)
    document_listeners: list[Callable[[Any], None]]
    runs: Runs  # one turn from request to delivered edit (lsp/services/runs.py)

    # --- workspace
    @property
    @abstractmethod
    def roots(self) -> list[Path]: ...

    @property
    @abstractmethod
    def root(self) -> Path | None: ...

    @property
    @abstractmethod
    def root_uri(self) -> str | None: ...

    @property
    @abstractmethod
    def position_encoding(self) -> str: ...

    @abstractmethod
    def new_workspace(self) -> Workspace: ...

    # --- settings
    @abstractmethod
    async def ready(self) -> ResolvedSettings: ...

    @abstractmethod
    async def client_section(self) -> dict[str, Any]: ...

    @abstractmethod
    def client_fetched(self, client: dict[str, Any]) -> None: ...

    @abstractmethod
    async def reload_settings(self) -> ResolvedSettings: ...

    @abstractmethod
    def apply_settings(self, resolved: ResolvedSettings) -> None: ...

    @property
    @abstractmethod
    def settings(self) -> Settings: ...

    @property
    @abstractmethod
    def client_settings(self) -> dict[str, Any]: ...

    # --- the engine and runs
    @abstractmethod
    def engine_if_built(self) -> EngineHost | None: ...

    @abstractmethod
    async def engine(self) -> EngineHost: ...

    @abstractmethod
    async def imported(self, name: str) -> ModuleType:
        """Module ``name``, imported in a thread (one such import at a time), so a feature's
        first use of a heavy module never blocks the event loop."""

    # --- project facts ahead of the first chat
    @abstractmethod
    async def warm_up(self) -> None: ...

    @abstractmethod
    def files_changed(self, uris: list[str]) -> None: ...


    # --- housekeeping
    @abstractmethod
    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]: ...

    @abstractmethod
    async def aclose(self) -> None: ...
