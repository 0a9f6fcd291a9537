"""What a front-end may lend the engine to run its sandboxed commands somewhere else (the ACP
client's terminal, ``Frontend.command_runner``): it gets the engine's own ``Launch`` (the
bubblewrap command line over the shadow workspace, built by tools/shell/sandboxed.py) and
gives back an ``ExternalRun``. Front doors name these here, never the tools' process code,
so none of them can start a program the sandbox did not wrap (a pyproject.toml contract)."""

from __future__ import annotations

from agentls.tools.shell.shell_exec import CommandRunner, ExternalRun, Launch

__all__ = ["CommandRunner", "ExternalRun", "Launch"]
