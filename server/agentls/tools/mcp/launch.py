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
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agentls.policy.redaction import known_secrets
from agentls.sandbox.bwrap import (
    ArgumentRefused,
    ProgramNotFound,
    SandboxSettings,
    argument_paths,
    bwrap_argv,
    home_dirs,
    probe,
    program_path,
    program_paths,
    sandbox_environment,
)
from agentls.settings.mcp import McpServerConfig
from agentls.tools.mcp.stdout_cap import line_cap, relay_argv
from agentls.workspace.fence import Workspace
from agentls.workspace.overlay import hidden_layers

SANDBOX_HOME = "/tmp/home"
SANDBOX_TMP = "/tmp"


class LaunchError(Exception):
    """The server cannot be started as configured; the message says what to do."""


def resolve_command(command: str, environ: Mapping[str, str], cwd: Path) -> str:
    """The program's path (``sandbox.program_path``), a LaunchError when there is none."""
    try:
        return program_path(command, environ, cwd)
    except ProgramNotFound as exc:
        raise LaunchError(str(exc)) from None


@dataclass
class Launch:
    """The process to spawn for one stdio server."""

    command: str
    args: list[str]
    env: dict[str, str]
    cwd: str
    sandboxed: bool
    note: str  # how it runs, in words: shown in approvals and `agentls mcp`
    cleanup: list[str] = field(default_factory=list)  # folders to remove once it stopped

    def remove_files(self) -> None:
        for folder in self.cleanup:
            shutil.rmtree(folder, ignore_errors=True)


def sandbox_note(network: bool) -> str:
    return (f"sandboxed: {'network on' if network else 'no network'}, workspace read-only")


def server_environment(config: McpServerConfig, environ: Mapping[str, str],
                       secret_env: str | None, *, home: str, tmpdir: str) -> dict[str, str]:
    """The server's whole environment: PATH and the safe list, the names in ``env_vars``, the
    values in ``env``; never the backend key, under any name."""
    settings = SandboxSettings(env=list(config.env_vars))
    env = sandbox_environment(settings, environ, home, tmpdir, secret_env)
    env.update(config.env)
    secrets = set(known_secrets())
    if secret_env and environ.get(secret_env):
        secrets.add(environ[secret_env])
    if secret_env:
        env.pop(secret_env, None)
    return {k: v for k, v in env.items() if v not in secrets}


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
        env = server_environment(config, env_in, secret_env,
                                 home=env_in.get("HOME", SANDBOX_HOME),
                                 tmpdir=env_in.get("TMPDIR", tempfile.gettempdir()))
        argv = relay_argv(line_cap(config.output_limit), [command, *config.args])
        setpriv = shutil.which("setpriv")
        if setpriv is not None:  # ends with AgentLS, even after kill -9
            argv = [setpriv, "--pdeathsig", "KILL", "--", *argv]
        return Launch(argv[0], argv[1:], env, str(root), False,
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
    env = server_environment(config, env_in, secret_env, home=SANDBOX_HOME, tmpdir=SANDBOX_TMP)
    folder = tempfile.mkdtemp(prefix=f"agentls-mcp-{name}-")
    try:
        layers = hidden_layers(ws, Path(folder))
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise LaunchError(f"could not prepare the sandbox's view of the workspace: {exc}") from exc
    served = relay_argv(line_cap(config.output_limit), [command, *config.args])
    argv = bwrap_argv(status.bwrap, settings, layers, root, env, served,
                      hidden_homes=home_dirs(env_in), read_only=True)
    return Launch(argv[0], argv[1:], {"PATH": env["PATH"]}, str(root), True,
                  sandbox_note(config.network), cleanup=[folder])
