"""How a stdio MCP server is started: inside the command sandbox, or directly when configured.

Sandboxed (the default), the server runs under the same bwrap command line as ``shell_exec``
(``agentls.sandbox.bwrap.bwrap_argv``): own user, pid and network namespaces (the network
only with ``network = true``), ``/`` read-only, homes hidden, a cleared environment, and the
workspace as a *read-only* overlay whose lower layer hides what the deny list hides (`.env*`,
keys, ``.agentls/``). ``--die-with-parent`` and the pid namespace end it, and everything it
started, when AgentLS dies, even by ``kill -9``. Unsandboxed (``sandbox = false`` or
``sandbox.mode = off``) it still gets the cleared environment, and ``setpriv --pdeathsig``
ends it with AgentLS. Either way the server runs under ``stdout_cap``'s relay, which cuts a
message too big to parse before the SDK reads it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from agentls.sandbox.bwrap import (
    ArgumentRefused,
    ProgramNotFound,
    SandboxSettings,
    argument_paths,
    probe,
    program_path,
    program_paths,
)
from agentls.sandbox.launched_server import (
    Launch,
    LaunchError,
    direct_argv,
    sandboxed_argv,
    server_environment,
)
from agentls.settings.mcp import McpServerConfig
from agentls.tools.mcp.stdout_cap import line_cap, relay_argv
from agentls.workspace.fence import Workspace
from agentls.workspace.overlay import hidden_layers


def resolve_command(command: str, environ: Mapping[str, str], cwd: Path) -> str:
    """The program's path (``sandbox.program_path``), a LaunchError when there is none."""
    try:
        return program_path(command, environ, cwd)
    except ProgramNotFound as exc:
        raise LaunchError(str(exc)) from None


def sandbox_note(network: bool) -> str:
    return (f"sandboxed: {'network on' if network else 'no network'}, workspace read-only")


def stdio_launch(name: str, config: McpServerConfig, sandbox: SandboxSettings, ws: Workspace,
                 *, secret_env: str | None, environ: Mapping[str, str] | None = None
                 ) -> Launch:
    """The process to start for ``mcp.servers.NAME`` (a stdio one) over this workspace."""
    assert config.command is not None
    env_in = os.environ if environ is None else environ
    root = ws.roots[0]
    command = resolve_command(config.command, env_in, root)
    if not config.sandbox or sandbox.mode == "off":
        why = "sandbox = false" if not config.sandbox else "sandbox.mode = off"
        env = server_environment(env_in, secret_env, sandboxed=False,
                                 names=config.env_vars, given=config.env)
        argv = direct_argv(relay_argv(line_cap(config.output_limit), [command, *config.args]))
        return Launch(argv, env, str(root), False,
                      f"not sandboxed ({why}): it runs directly on this machine")
    status = probe(env_in)
    if not status.available or status.bwrap is None:
        raise LaunchError(
            f"MCP server {name!r} must run in the sandbox and no sandbox can run here "
            f"({status.detail}). Fix: {status.fix}; or set mcp.servers.{name}.sandbox = false "
            "to run it directly (unsafe: it sees your files, keys and network)")
    try:  # the program, its interpreter and installation, and the files its arguments name
        shown = [*program_paths(command, env_in), *argument_paths(config.args, root, env_in)]
    except ArgumentRefused as exc:
        raise LaunchError(f"MCP server {name!r} cannot start in the sandbox: {exc}") from None
    settings = sandbox.model_copy(update={
        "network": config.network, "read_paths": [*sandbox.read_paths, *shown]})
    env = server_environment(env_in, secret_env, sandboxed=True, names=config.env_vars,
                             given=config.env)
    served = relay_argv(line_cap(config.output_limit), [command, *config.args])
    argv, folder = sandboxed_argv(status.bwrap, settings, root, env, served, env_in,
                                  prefix=f"agentls-mcp-{name}-",
                                  view=lambda folder: hidden_layers(ws, folder))
    return Launch(argv, {"PATH": env["PATH"]}, str(root), True,
                  sandbox_note(config.network), cleanup=[folder])
