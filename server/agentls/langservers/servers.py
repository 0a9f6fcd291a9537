"""The engine's language servers as the tools and the check see them: which servers cover a
workspace (the settings, root markers, a PATH lookup) and the questions they answer.

Deciding which servers cover the workspace imports nothing of the LSP client (lsprotocol,
pygls): `agentls run` decides it before its first model request. The running servers
(``fleet.Fleet``, with the client) are loaded on the first question, or by the loop's check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agentls.langservers import specs as spec_module

if TYPE_CHECKING:
    from agentls.langservers.fleet import Fleet
    from agentls.langservers.results import Answer
    from agentls.langservers.running_server import LangServer
    from agentls.langservers.specs import ServerSpec
    from agentls.settings.models import LspConfig
    from agentls.settings.sandbox import SandboxSettings
    from agentls.workspace.fence import Workspace


class LangServers:
    """One engine's language servers: the choice per workspace roots, the fleet on demand."""

    def __init__(self, config: LspConfig, sandbox: SandboxSettings, *,
                 secret_env: str | None, environ: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.sandbox = sandbox
        self.secret_env = secret_env
        self.environ = environ
        self._specs: dict[tuple[Path, ...], tuple[list[ServerSpec], list[str]]] = {}
        self._fleet: Fleet | None = None

    def configure(self, config: LspConfig, sandbox: SandboxSettings, secret_env: str | None
                  ) -> None:
        """New settings: servers whose spec changed are stopped on their next use."""
        if (config, sandbox, secret_env) != (self.config, self.sandbox, self.secret_env):
            self.config, self.sandbox, self.secret_env = config, sandbox, secret_env
            self._specs.clear()

    # -- which servers -------------------------------------------------------------------

    def specs(self, ws: Workspace) -> list[ServerSpec]:
        return self._resolved(ws)[0]

    def notes(self, ws: Workspace) -> list[str]:
        return self._resolved(ws)[1]

    def _resolved(self, ws: Workspace) -> tuple[list[ServerSpec], list[str]]:
        key = tuple(ws.roots)
        if key not in self._specs:
            self._specs[key] = spec_module.resolve(self.config, ws.roots, self.environ)
        return self._specs[key]

    def covers(self, ws: Workspace) -> bool:
        """Whether any server applies to this workspace (the tools are offered then)."""
        return bool(self.specs(ws))

    # -- the running servers (loaded on first use) -----------------------------------------

    @property
    def fleet(self) -> Fleet:
        if self._fleet is None:
            from agentls.langservers.fleet import Fleet

            self._fleet = Fleet(self)
        return self._fleet

    def server(self, spec: ServerSpec, ws: Workspace) -> LangServer:
        return self.fleet.server(spec, ws)

    def servers(self) -> list[LangServer]:
        return [] if self._fleet is None else self._fleet.servers()

    async def diagnostics(self, ws: Workspace, paths: Sequence[Path], *, compare: bool = True,
                          timeout: float | None = None) -> Answer:
        """Each file's problems from every server that serves it; with ``compare``, those
        not there in the file's text before the run changed it are marked new."""
        return await self.fleet.diagnostics(ws, paths, compare=compare, timeout=timeout)

    async def definition(self, ws: Workspace, path: Path, line: int, column: int) -> Answer:
        return await self.fleet.definition(ws, path, line, column)

    async def references(self, ws: Workspace, path: Path, line: int, column: int) -> Answer:
        return await self.fleet.references(ws, path, line, column)

    async def hover(self, ws: Workspace, path: Path, line: int, column: int) -> Answer:
        return await self.fleet.hover(ws, path, line, column)

    async def workspace_symbols(self, ws: Workspace, query: str) -> Answer:
        return await self.fleet.workspace_symbols(ws, query)

    async def stop_idle(self) -> None:
        if self._fleet is not None:
            await self._fleet.stop_idle()

    async def aclose(self) -> None:
        if self._fleet is not None:
            await self._fleet.aclose()
