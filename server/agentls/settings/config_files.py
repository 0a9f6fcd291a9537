"""Config files: where they live, reading and writing them, and the dotted-key helpers.

Nothing here imports pydantic, so `agentls config path` and `config reset` start at once;
validation lives in ``agentls.settings.config`` (the models: ``agentls.settings.models``).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from agentls.base import state_file
from agentls.settings import trust as workspace_trust

APP_NAME = "agentls"
WORKSPACE_DIR = ".agentls"


class ConfigError(Exception):
    """A configuration problem, worded for the person who has to fix it."""


def user_config_file() -> Path:
    return platformdirs.user_config_path(APP_NAME) / "config.toml"


def workspace_config_file(workspace: Path) -> Path:
    return workspace / WORKSPACE_DIR / "config.toml"


def user_cache_dir() -> Path:
    return platformdirs.user_cache_path(APP_NAME)


@dataclass
class Layer:
    name: str  # shown by `config list`: default, user, workspace, env, client, flags
    data: dict[str, Any]


def env_settings(env: Mapping[str, str],
                 keys: Iterable[str]) -> Iterator[tuple[str, str, str]]:
    """(variable, dotted key, text) for each ``AGENTLS_*`` variable that names a setting:
    ``.`` written as ``__`` (``AGENTLS_CACHE__TTL_S``) or, for keys without ``<name>``, as
    ``_`` (``AGENTLS_CACHE_TTL_S``). Other ``AGENTLS_*`` variables (test switches, paths, and
    ``AGENTLS_MODEL``, which follows the active backend) are not settings."""
    single = {k.replace(".", "_").upper(): k for k in keys if "<name>" not in k}
    for name, raw in env.items():
        if not name.startswith("AGENTLS_") or name == "AGENTLS_MODEL":
            continue
        suffix = name[len("AGENTLS_"):]
        if "__" in suffix:
            yield name, ".".join(part.lower() for part in suffix.split("__")), raw
        elif suffix in single:
            yield name, single[suffix], raw


def env_layer(env: Mapping[str, str], keys: Iterable[str],
              parse: Callable[[str, str], Any]) -> dict[str, Any]:
    """The environment's settings: each ``AGENTLS_*`` variable's text as ``parse`` (the key
    index's ``parse_value``, as `config set` reads a value) makes it, and ``OPENAI_BASE_URL``
    for the ``openai`` backend."""
    data: dict[str, Any] = {}
    for name, key, raw in env_settings(env, keys):
        try:
            set_dotted(data, key, parse(key, raw))
        except ConfigError as exc:
            raise ConfigError(f"environment variable {name}: {exc}") from None
    if env.get("OPENAI_BASE_URL"):
        set_dotted(data, "backends.openai.base_url", env["OPENAI_BASE_URL"])
    return data


def source_of(layers: Sequence[Layer], key: str) -> str:
    """The name of the highest layer that sets ``key`` ("default" when none does)."""
    for layer in reversed(layers):
        try:
            get_dotted(layer.data, key)
        except KeyError:
            continue
        return layer.name
    return "default"


def flag_layer(flags: Mapping[str, Any]) -> Layer:
    """The command line's dotted keys (``--set model=x`` and the like) as the top layer."""
    data: dict[str, Any] = {}
    for key, value in flags.items():
        set_dotted(data, key, value)
    return Layer("command line", data)


def file_layers(defaults: dict[str, Any], workspace: Path | None, env: Mapping[str, str],
                editor_trusted: bool = False) -> tuple[list[Layer], list[str]]:
    """The defaults, the user's file and the workspace's file as layers, and the notices for the
    person: a workspace file they have not trusted cannot loosen safety settings (see
    ``agentls.settings.trust``); what it tried is left out and said."""
    layers = [Layer("default", defaults)]
    user_file = user_config_file()
    layers.append(Layer(f"user ({user_file})", read_config_file(user_file)))
    notices: list[str] = []
    if workspace is not None:
        ws_file = workspace_config_file(workspace)
        ws_data = read_config_file(ws_file)
        if ws_data:
            trust = workspace_trust.state(workspace, ws_file, env=env,
                                          editor_trusted=editor_trusted)
            if not trust.trusted:
                screened = workspace_trust.screen(ws_data, deep_merge(dict(defaults),
                                                                      layers[1].data))
                ws_data = screened.data
                if screened.left_out:
                    notices.append(workspace_trust.notice(ws_file, screened.left_out, trust.why))
        layers.append(Layer(f"workspace ({ws_file})", ws_data))
    return layers, notices


def merge_layers(layers: Sequence[Layer], env: Mapping[str, str]) -> dict[str, Any]:
    """The layers merged in order. ``AGENTLS_MODEL`` follows whichever backend the lower layers
    made active; it goes into the environment layer so `config list` names it as the source."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer.name == "environment" and env.get("AGENTLS_MODEL"):
            active = str(layer.data.get("backend", merged.get("backend", "openai")))
            set_dotted(layer.data, f"backends.{active}.model", env["AGENTLS_MODEL"])
        if not isinstance(layer.data, Mapping):
            raise ConfigError(f"{layer.name}: expected a table of settings")
        try:
            merged = deep_merge(merged, layer.data)
        except (TypeError, AttributeError):
            raise ConfigError(f"{layer.name}: expected a table of settings") from None
    return merged


def _reset_command(path: Path) -> str:
    # A workspace file lives in .agentls/; `config reset` alone would reset the user file.
    workspace = path.parent.name == WORKSPACE_DIR
    return "agentls config reset --workspace" if workspace else "agentls config reset"


def read_config_file(path: Path) -> dict[str, Any]:
    """A TOML config file as a dict; missing means empty; unparseable is a ``ConfigError``."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"at line (\d+)", str(exc))
        line = int(found.group(1)) if found else max(1, len(text.splitlines()))
        reason = re.sub(r" \(at (line \d+, column \d+|end of document)\)", "", str(exc))
        raise ConfigError(
            f"config file {path}, line {line}: not valid TOML ({reason}).\n"
            f"Fix that line, or run `{_reset_command(path)}` to start again from defaults "
            f"(the old file is kept as {path.name}.bak)."
        ) from None


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    node = data
    *parents, leaf = key.split(".")
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[leaf] = value


def get_dotted(data: Mapping[str, Any], key: str) -> Any:
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def deep_merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out



def write_config_file(path: Path, data: Mapping[str, Any]) -> None:
    """Write atomically: a crash leaves the old file or the new one, never half of one."""
    import tomli_w

    text = tomli_w.dumps(_without_none(data))
    try:
        state_file.write_text(path, text, parents=True)
    except OSError as exc:
        raise ConfigError(f"cannot write config file {path}: {exc.strerror or exc}; check "
                          "that its folder is writable") from None


def _without_none(data: Mapping[str, Any]) -> dict[str, Any]:
    # TOML has no null: an unset optional (api_key_env = none) is stored as an empty string.
    return {
        k: _without_none(v) if isinstance(v, Mapping) else ("" if v is None else v)
        for k, v in data.items()
    }


def reset(path: Path) -> Path | None:
    """Move the config file aside (``config.toml.bak``); defaults apply again."""
    if not path.exists():
        return None
    backup = path.with_name(path.name + ".bak")
    try:
        os.replace(path, backup)
    except OSError as exc:
        raise ConfigError(f"cannot move {path} to {backup}: {exc.strerror or exc}; check that "
                          "its folder is writable, or delete the file yourself") from None
    return backup
