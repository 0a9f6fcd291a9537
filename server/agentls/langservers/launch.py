"""The command line a language server runs with: inside the command sandbox.

As for a sandboxed MCP server (``tools/mcp/launch.py``): bwrap with no network, a cleared
environment without the backend key, homes hidden, ``/`` read-only, and each workspace root
as a read-only overlay whose lower layer hides what the fence's deny list hides. The server's
root is the real workspace, read-only; the agent's pending text reaches it as open documents
(``running_server.py``). ``--die-with-parent`` ends it with AgentLS. No sandbox here: it does
not start unless ``sandbox.mode = off`` (then it runs directly, still without the key or the
environment).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agentls.langservers.specs import ServerSpec, search_path
from agentls.policy.redaction import known_secrets
from agentls.sandbox.bwrap import (
    ProgramNotFound,
    SandboxSettings,
    bwrap_argv,
    home_dirs,
    probe,
    program_path,
    program_paths,
    sandbox_environment,
)
from agentls.workspace.fence import Workspace
from agentls.workspace.overlay import hidden_layers

SANDBOX_HOME = "/tmp/home"
SANDBOX_TMP = "/tmp"


class LaunchError(Exception):
    """The server cannot be started; the message says why and what to do."""


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]
    cwd: str
    sandboxed: bool
    cleanup: list[str] = field(default_factory=list)

    def remove_files(self) -> None:
        for folder in self.cleanup:
            shutil.rmtree(folder, ignore_errors=True)


def _environment(environ: Mapping[str, str], secret_env: str | None, *, home: str,
                 tmpdir: str) -> dict[str, str]:
    env = sandbox_environment(SandboxSettings(), environ, home, tmpdir, secret_env)
    env["PATH"] = search_path(environ)
    secrets = set(known_secrets())
    if secret_env and environ.get(secret_env):
        secrets.add(environ[secret_env])
    return {k: v for k, v in env.items() if v not in secrets}


def server_launch(spec: ServerSpec, sandbox: SandboxSettings, ws: Workspace, *,
                  secret_env: str | None, environ: Mapping[str, str] | None = None) -> Launch:
    env_in = os.environ if environ is None else environ
    root = ws.roots[0]
    try:
        command = program_path(spec.command, {**env_in, "PATH": search_path(env_in)}, root)
    except ProgramNotFound as exc:
        raise LaunchError(f"language server {spec.name!r}: {exc}") from None
    if sandbox.mode == "off":
        env = _environment(env_in, secret_env, home=env_in.get("HOME", SANDBOX_HOME),
                           tmpdir=env_in.get("TMPDIR", tempfile.gettempdir()))
        argv = [command, *spec.args]
        setpriv = shutil.which("setpriv")
        if setpriv is not None:  # ends with AgentLS, even after kill -9
            argv = [setpriv, "--pdeathsig", "KILL", "--", *argv]
        return Launch(argv, env, str(root), False)
    status = probe(env_in)
    if not status.available or status.bwrap is None:
        raise LaunchError(
            f"language server {spec.name!r} runs only in the sandbox and no sandbox can run "
            f"here ({status.detail}). Fix: {status.fix}")
    settings = sandbox.model_copy(update={
        "network": False,
        "read_paths": [*sandbox.read_paths, *program_paths(command, env_in)]})
    env = _environment(env_in, secret_env, home=SANDBOX_HOME, tmpdir=SANDBOX_TMP)
    folder = tempfile.mkdtemp(prefix=f"agentls-lsp-{spec.name}-")
    try:
        layers = hidden_layers(ws, Path(folder))
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise LaunchError(f"could not prepare the sandbox's view of the workspace: {exc}"
                          ) from exc
    argv = bwrap_argv(status.bwrap, settings, layers, root, env, [command, *spec.args],
                      hidden_homes=home_dirs(env_in), read_only=True)
    return Launch(argv, {"PATH": env["PATH"]}, str(root), True, cleanup=[folder])
