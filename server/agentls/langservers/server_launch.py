"""The command line a language server runs with: inside the command sandbox.

As for a sandboxed MCP server (``tools/mcp/launch.py``; the shared part is
``sandbox/launched_server.py``): bwrap with no network, a cleared
environment without the backend key, homes hidden, ``/`` read-only, and each workspace root
as a read-only overlay whose lower layer hides what the fence's deny list hides. The server's
root is the real workspace, read-only; the agent's pending text reaches it as open documents
(``running_server.py``). ``--die-with-parent`` ends it with AgentLS. No sandbox here: it does
not start unless ``sandbox.mode = off`` (then it runs directly, still without the key or the
environment).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from agentls.langservers.specs import ServerSpec, search_path
from agentls.sandbox.bwrap import (
    ProgramNotFound,
    SandboxSettings,
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
from agentls.workspace.fence import Workspace
from agentls.workspace.overlay import hidden_layers


def server_launch(spec: ServerSpec, sandbox: SandboxSettings, ws: Workspace, *,
                  secret_env: str | None, environ: Mapping[str, str] | None = None) -> Launch:
    env_in = os.environ if environ is None else environ
    root = ws.roots[0]
    try:
        command = program_path(spec.command, {**env_in, "PATH": search_path(env_in)}, root)
    except ProgramNotFound as exc:
        raise LaunchError(f"language server {spec.name!r}: {exc}") from None
    path = {"PATH": search_path(env_in)}
    if sandbox.mode == "off":
        env = server_environment(env_in, secret_env, sandboxed=False, given=path)
        return Launch(direct_argv([command, *spec.args]), env, str(root), False)
    status = probe(env_in)
    if not status.available or status.bwrap is None:
        raise LaunchError(
            f"language server {spec.name!r} runs only in the sandbox and no sandbox can run "
            f"here ({status.detail}). Fix: {status.fix}")
    settings = sandbox.model_copy(update={
        "network": False,
        "read_paths": [*sandbox.read_paths, *program_paths(command, env_in)]})
    env = server_environment(env_in, secret_env, sandboxed=True, given=path)
    argv, folder = sandboxed_argv(status.bwrap, settings, root, env, [command, *spec.args],
                                  env_in, prefix=f"agentls-lsp-{spec.name}-",
                                  view=lambda folder: hidden_layers(ws, folder))
    return Launch(argv, {"PATH": env["PATH"]}, str(root), True, cleanup=[folder])
