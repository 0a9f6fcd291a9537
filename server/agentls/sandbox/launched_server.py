"""What a server AgentLS launches over a workspace may see (an MCP server, a language
server): the process to spawn, its environment and its command line, sandboxed or direct.

The environment is cleared to PATH and the safe list (plus names and values the caller
passes), never the backend key under any name nor a known secret's value. Sandboxed, the
command runs under ``bwrap_argv`` over a read-only view of the workspace (the caller makes
its layers: the fence's deny list hides what it hides), homes hidden; ``--die-with-parent``
ends it with AgentLS. Direct, ``setpriv --pdeathsig`` does (where setpriv exists).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentls.policy.redaction import known_secrets
from agentls.sandbox.bwrap import (
    RootLayers,
    SandboxSettings,
    bwrap_argv,
    home_dirs,
    sandbox_environment,
)

SANDBOX_HOME = "/tmp/home"
SANDBOX_TMP = "/tmp"


class LaunchError(Exception):
    """The server cannot be started; the message says why and what to do."""


@dataclass
class Launch:
    """The process to spawn for one server."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    sandboxed: bool
    note: str = ""  # how it runs, in words (an MCP server's: approvals, `agentls mcp`)
    cleanup: list[str] = field(default_factory=list)  # folders to remove once it stopped

    @property
    def command(self) -> str:
        return self.argv[0]

    @property
    def args(self) -> list[str]:
        return self.argv[1:]

    def remove_files(self) -> None:
        for folder in self.cleanup:
            shutil.rmtree(folder, ignore_errors=True)


def server_environment(environ: Mapping[str, str], secret_env: str | None, *, sandboxed: bool,
                       names: Sequence[str] = (), given: Mapping[str, str] | None = None
                       ) -> dict[str, str]:
    """The server's whole environment: PATH and the safe list, the ``names`` passed on, the
    values ``given``; never the backend key (``secret_env``), under any name, nor the value of
    a known secret. HOME and TMPDIR: private in the sandbox, the person's when run directly."""
    if sandboxed:
        home, tmpdir = SANDBOX_HOME, SANDBOX_TMP
    else:
        home = environ.get("HOME", SANDBOX_HOME)
        tmpdir = environ.get("TMPDIR", tempfile.gettempdir())
    env = sandbox_environment(SandboxSettings(env=list(names)), environ, home, tmpdir,
                              secret_env)
    env.update(given or {})
    secrets = set(known_secrets())
    if secret_env and environ.get(secret_env):
        secrets.add(environ[secret_env])
    if secret_env:
        env.pop(secret_env, None)
    return {k: v for k, v in env.items() if v not in secrets}


def direct_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` run directly, ended with AgentLS even after kill -9 where setpriv exists."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", *argv] if setpriv else list(argv)


def sandboxed_argv(bwrap: str, settings: SandboxSettings, root: Path, env: Mapping[str, str],
                   argv: Sequence[str], environ: Mapping[str, str], *, prefix: str,
                   view: Callable[[Path], Sequence[RootLayers]]) -> tuple[list[str], str]:
    """``argv`` under bwrap, the workspace read-only as ``view`` lays it out in a new folder
    (``workspace.overlay.hidden_layers``), the homes hidden. Returns the command line and
    that folder (the Launch's cleanup)."""
    folder = tempfile.mkdtemp(prefix=prefix)
    try:
        layers = view(Path(folder))
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise LaunchError(f"could not prepare the sandbox's view of the workspace: {exc}"
                          ) from exc
    return bwrap_argv(bwrap, settings, layers, root, env, argv,
                      hidden_homes=home_dirs(environ), read_only=True), folder
