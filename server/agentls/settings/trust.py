"""Workspace trust: what a project's own ``.agentls/config.toml`` may change before you trust it.

A project's config file is meant to be committed and shared (DESIGN.md decision 9), so it
arrives with every ``git clone``. Most of its keys are harmless (model, limits, cache), but a
few would turn a hostile repository into an attack: point a backend at another server and
name an environment variable as its "key" (your code and that variable leave the machine),
switch the sandbox off or give it the network, allow ``shell_exec`` without asking, or declare
an MCP server (a program AgentLS would start).

Until the person trusts the workspace, those keys are honoured from the project file only when
they make things *stricter* (``sandbox.ask = true``, a tool set to ``deny``, a longer
``shell_deny``); loosening values are left out and named in a warning that says how to trust
the folder. Trust is recorded per folder *and per content* of its config file (like Neovim's
``vim.secure``): after a ``git pull`` that changes the file, it must be trusted again.

Where trust comes from: ``agentls trust`` (the record lives in the user config directory, never
in the project), ``AGENTLS_TRUST_WORKSPACE=1`` in the person's environment (scripts, CI), or
an editor that itself runs only in trusted workspaces (VS Code's Workspace Trust: the extension
says so in ``initializationOptions.workspaceTrusted``).

Nothing here imports pydantic: it works on the raw layers, before validation.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from agentls.base import state_file

ENV = "AGENTLS_TRUST_WORKSPACE"
TRUST_COMMAND = "agentls trust"


def trust_file() -> Path:
    return platformdirs.user_config_path("agentls") / "trusted-workspaces.json"


def _key(workspace: Path) -> str:
    return str(workspace.resolve())


def content_hash(config_file: Path) -> str | None:
    """SHA-256 of the config file's bytes, ``None`` when there is none."""
    try:
        return hashlib.sha256(config_file.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def _read_records() -> dict[str, str]:
    try:
        data = json.loads(trust_file().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}  # an unreadable record trusts nothing; `agentls trust` rewrites it
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items()}


def _write_records(records: Mapping[str, str]) -> None:
    state_file.write_text(trust_file(), json.dumps(dict(sorted(records.items())), indent=2)
                          + "\n", parents=True)


@dataclass(frozen=True)
class TrustState:
    trusted: bool
    why: str  # "agentls trust", "AGENTLS_TRUST_WORKSPACE", "editor", "not trusted", "changed"


def state(workspace: Path, config_file: Path, *, env: Mapping[str, str] | None = None,
          editor_trusted: bool = False) -> TrustState:
    environ = os.environ if env is None else env
    if environ.get(ENV, "").strip().lower() in ("1", "true", "yes"):
        return TrustState(True, ENV)
    if editor_trusted:
        return TrustState(True, "editor")
    recorded = _read_records().get(_key(workspace))
    if recorded is None:
        return TrustState(False, "not trusted")
    if recorded != content_hash(config_file):
        return TrustState(False, "changed")
    return TrustState(True, TRUST_COMMAND)


def trust(workspace: Path, config_file: Path) -> None:
    """Trust the folder with its config file as it is now."""
    records = _read_records()
    records[_key(workspace)] = content_hash(config_file) or ""
    _write_records(records)


def revoke(workspace: Path) -> bool:
    records = _read_records()
    if records.pop(_key(workspace), None) is None:
        return False
    _write_records(records)
    return True


def refresh_if_trusted(workspace: Path, config_file: Path, before: str | None) -> None:
    """The person changed the file themselves (``config set --workspace``): a trust that held
    for the old content carries over to the new one."""
    records = _read_records()
    if records.get(_key(workspace)) == (before or ""):
        trust(workspace, config_file)


def trusted_folders() -> list[str]:
    return sorted(_read_records())


# --- screening a project file ------------------------------------------------------------

_MODE_RANK = {"off": 0, "auto": 1, "required": 2}
_PERMISSION_RANK = {"allow": 0, "ask": 1, "deny": 2}


def _rank(table: Mapping[str, int]) -> Callable[[Any, Any], bool]:
    def stricter(new: Any, old: Any) -> bool:
        return isinstance(new, str) and new in table and table[new] >= table.get(old, 0)
    return stricter


def _subset(new: Any, old: Any) -> bool:
    return isinstance(new, list) and set(new) <= set(old or [])


def _superset(new: Any, old: Any) -> bool:
    return isinstance(new, list) and set(new) >= set(old or [])


def _no_key(new: Any, old: Any) -> bool:
    return new in (None, "") or new == old


def _same(new: Any, old: Any) -> bool:
    return new == old


# key pattern (``*`` = any one part) -> "is the project's value at least as strict as this one?"
SENSITIVE: dict[str, Callable[[Any, Any], bool]] = {
    "backends.*.base_url": _same,          # where your code and the key are sent
    "backends.*.api_key_env": _no_key,     # which of your variables is sent as the key
    "index.embedding_base_url": _same,
    "index.embedding_api_key_env": _no_key,
    "sandbox.mode": _rank(_MODE_RANK),
    "sandbox.network": lambda new, old: new is False or new == old,
    "sandbox.env": _subset,
    "sandbox.read_paths": _subset,
    "sandbox.memory_mb": lambda new, old: isinstance(new, int) and new <= (old or new),
    "sandbox.ask": lambda new, old: new is True or new == old,
    "permissions.default": _rank(_PERMISSION_RANK),
    "permissions.tools.*": _rank(_PERMISSION_RANK),
    "permissions.shell_allow": _subset,
    "permissions.shell_deny": _superset,
}


def _permission_at_least(new: Any, old: Any) -> bool:
    """As ``_rank(_PERMISSION_RANK)``, with an unset value read as "ask"; a lower value that is
    no permission at all (a typo the full check will name) counts as the loosest."""
    return isinstance(new, str) and new in _PERMISSION_RANK and \
        _PERMISSION_RANK[new] >= _PERMISSION_RANK.get(old or "ask", 0)


# MCP servers (`mcp.servers.NAME.*`) start programs: a project may only narrow the servers the
# person configured (turn one off, sandbox it, take its network, ask or deny its tools);
# every other key under `mcp.servers` must equal the person's own value.
_MCP_SERVER_KEYS: dict[str, Callable[[Any, Any], bool]] = {
    "enabled": lambda new, old: new is False or new == old,
    "sandbox": lambda new, old: new is True or new == old,
    "network": lambda new, old: new is False or new == old,
    "permission": _permission_at_least,
}


def _mcp_rule(parts: list[str]) -> Callable[[Any, Any], bool] | None:
    if len(parts) < 3 or parts[1] != "servers":
        return None  # mcp.max_tools_in_prompt: harmless
    if len(parts) == 4 and parts[3] in _MCP_SERVER_KEYS:
        return _MCP_SERVER_KEYS[parts[3]]
    if len(parts) == 5 and parts[3] == "tools":
        return _permission_at_least
    return _same


# Language servers (`lsp.servers.NAME.*`, docs/LANGUAGE_SERVERS.md) start programs too: a
# project may turn one off, and nothing else, until trusted; `lsp.detect` only off.
def _lsp_rule(parts: list[str]) -> Callable[[Any, Any], bool] | None:
    if parts[1:] == ["detect"] or (len(parts) == 4 and parts[1] == "servers"
                                   and parts[3] == "enabled"):
        return lambda new, old: new is False or new == old
    if len(parts) >= 3 and parts[1] == "servers":
        return _same
    return None  # lsp.idle_stop_s: harmless


def _rule(key: str) -> Callable[[Any, Any], bool] | None:
    parts = key.split(".")
    if parts[0] == "mcp":
        return _mcp_rule(parts)
    if parts[0] == "lsp":
        return _lsp_rule(parts)
    for pattern, rule in SENSITIVE.items():
        want = pattern.split(".")
        if len(want) == len(parts) and all(w in ("*", p) for w, p in zip(want, parts, strict=True)):
            return rule
    return None


def _leaves(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out += _leaves(value, dotted + ".")
        else:
            out.append((dotted, value))
    return out


def _below(below: Mapping[str, Any], key: str) -> Any:
    node: Any = below
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            break
        node = node[part]
    else:
        return node
    if key.startswith("permissions.tools."):  # a tool the lower layers never named
        return below.get("permissions", {}).get("default", "ask")
    return None


@dataclass
class Screened:
    data: dict[str, Any]
    left_out: list[str] = field(default_factory=list)  # dotted keys


def screen(project: Mapping[str, Any], below: Mapping[str, Any]) -> Screened:
    """The project layer without the values that would loosen what ``below`` (defaults and
    the person's own config) sets; ``left_out`` names them."""
    kept: dict[str, Any] = {}
    left_out: list[str] = []
    for key, value in _leaves(project):
        rule = _rule(key)
        if rule is not None and not _holds(rule, value, _below(below, key)):
            left_out.append(key)
            continue
        node = kept
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return Screened(kept, left_out)


def _holds(rule: Callable[[Any, Any], bool], new: Any, old: Any) -> bool:
    try:
        return rule(new, old)
    except TypeError:  # a value of the wrong kind ([] for a permission): left out, and named
        return False


def notice(config_file: Path, left_out: list[str], why: str) -> str:
    """The one warning a person sees for a screened project file."""
    keys = ", ".join(left_out)
    changed = " (it changed since you trusted it)" if why == "changed" else ""
    return (f"{config_file} is not trusted{changed}, so these settings from it were ignored: "
            f"{keys}. If you trust this project, run `{TRUST_COMMAND}` in it (or set "
            f"{ENV}=1); see docs/SECURITY.md.")
