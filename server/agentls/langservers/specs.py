"""What to start: the `lsp.servers.*` settings over the known servers detected on PATH, and
which server serves which file.

A configured name that is a known server inherits its fields (only what is set overrides);
an unknown name needs its own command and languages or globs. A server applies to a workspace
when it has no root markers or one of them is in a root.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentls.langservers.known import KNOWN, LANGUAGE_OF_SUFFIX, KnownServer
from agentls.settings.models import LangServerConfig, LspConfig

if TYPE_CHECKING:
    from agentls.settings.sandbox import SandboxSettings
    from agentls.workspace.fence import Workspace


@dataclass(frozen=True)
class ServerSpec:
    """One server to start, its fields resolved (``command`` as given or detected: it is
    looked up on PATH when launched, so a missing program is told then)."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    globs: tuple[str, ...] = ()
    root_markers: tuple[str, ...] = ()
    initialization_options: Mapping[str, Any] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    startup_timeout_s: float = 30.0
    timeout_s: float = 15.0
    detected: bool = False
    push_settle_s: float = 0.15

    def serves(self, path: Path) -> bool:
        """Whether this server answers for ``path`` (by glob or by language id)."""
        name = path.name
        if any(fnmatch.fnmatch(name, g) for g in self.globs):
            return True
        language = language_of(path)
        return language is not None and language in self.languages

    def applies_to(self, roots: Sequence[Path]) -> bool:
        return not self.root_markers or any(
            (root / marker).exists() for root in roots for marker in self.root_markers)


def language_of(path: Path) -> str | None:
    return LANGUAGE_OF_SUFFIX.get(path.suffix.lower())


def own_bin() -> str:
    return os.path.dirname(sys.executable)


def search_path(environ: Mapping[str, str]) -> str:
    """PATH, then the folder of AgentLS's own interpreter (a server pip installed beside
    AgentLS, as `make install` puts basedpyright, is found without activating the venv)."""
    own = own_bin()
    path = environ.get("PATH") or os.defpath
    return path if own in path.split(os.pathsep) else f"{path}{os.pathsep}{own}"


def find_known(known: type[KnownServer], environ: Mapping[str, str]) -> str | None:
    where = search_path(environ)
    for command in known.commands:
        found = shutil.which(command, path=where)
        if found:
            return found
    return None


def _from_known(known: type[KnownServer], command: str, detected: bool) -> ServerSpec:
    return ServerSpec(known.name, command, known.args, known.languages, known.globs,
                      known.root_markers, dict(known.initialization_options),
                      dict(known.settings), detected=detected,
                      push_settle_s=known.push_settle_s)


def _configured(name: str, config: LangServerConfig, environ: Mapping[str, str]
                ) -> ServerSpec | str:
    """The spec of ``lsp.servers.NAME``, or why it cannot be used."""
    known = KNOWN.get(name)
    base: ServerSpec | None = None
    if known is not None:
        base = _from_known(known, find_known(known, environ) or known.commands[0], False)
    command = config.command or (base.command if base else None)
    if command is None:
        return (f"lsp.servers.{name} has no command (it is not a known server: "
                f"{', '.join(KNOWN)}); set lsp.servers.{name}.command")
    set_fields = config.model_fields_set

    def pick(key: str, default: Any) -> Any:
        return getattr(config, key) if key in set_fields or base is None else default

    spec = ServerSpec(
        name, command,
        tuple(pick("args", base.args if base else ())),
        tuple(pick("languages", base.languages if base else ())),
        tuple(pick("globs", base.globs if base else ())),
        tuple(pick("root_markers", base.root_markers if base else ())),
        dict(pick("initialization_options", base.initialization_options if base else {})),
        dict(pick("settings", base.settings if base else {})),
        config.startup_timeout_s, config.timeout_s,
        push_settle_s=base.push_settle_s if base else ServerSpec.push_settle_s)
    if not spec.languages and not spec.globs:
        return (f"lsp.servers.{name} serves no file: set its languages (python, typescript "
                "...) or globs (*.py)")
    return spec


def resolve(config: LspConfig, roots: Sequence[Path], environ: Mapping[str, str] | None = None
            ) -> tuple[list[ServerSpec], list[str]]:
    """The servers that apply to a workspace with these roots, and notes for the person
    (a configured server that cannot be used, and why)."""
    env = os.environ if environ is None else environ
    specs: dict[str, ServerSpec] = {}
    notes: list[str] = []
    for name, server in config.servers.items():
        if not server.enabled:
            continue
        made = _configured(name, server, env)
        if isinstance(made, str):
            notes.append(made)
        else:
            specs[name] = made
    if config.detect:
        for name, known in KNOWN.items():
            if name in config.servers or any(other in specs for other in known.yields_to):
                continue
            found = find_known(known, env)
            if found is not None:
                specs[name] = _from_known(known, found, True)
    return [s for s in specs.values() if s.applies_to(roots)], notes


class FleetOwner(Protocol):
    """What the fleet reads of its owner (``servers.LangServers``), named here so that
    ``fleet.py`` need not import the module that loads it."""

    config: LspConfig
    sandbox: SandboxSettings
    secret_env: str | None
    environ: Mapping[str, str] | None

    def specs(self, ws: Workspace) -> list[ServerSpec]: ...
