"""Settings: every key, its default, where values come from, and how bad values are reported.

Precedence, low to high (DESIGN.md decision 10): defaults, the user config file, the
workspace's ``.agentls/config.toml``, the environment, LSP initializationOptions /
``workspace/configuration``, command-line flags.

Environment: ``AGENTLS_<KEY>`` sets any key, with ``.`` written as ``__`` (``AGENTLS_CACHE__TTL_S``,
``AGENTLS_BACKENDS__LOCAL__MODEL``) or, for keys outside ``backends``, as ``_``
(``AGENTLS_CACHE_TTL_S``). ``AGENTLS_MODEL`` sets the active backend's model and
``OPENAI_BASE_URL`` the ``openai`` backend's URL. API keys are only ever read from the
environment variable a backend names (``api_key_env``); no config file holds them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentls.policy import redaction
from agentls.settings import config_files

# The settings are read, checked and written through this module; its parts live in
# config_files (no pydantic: paths, TOML, dotted keys), config_models (the models) and
# config_keys (the key index). Their names stay importable from here.
from agentls.settings.config_files import (
    APP_NAME,
    WORKSPACE_DIR,
    ConfigError,
    Layer,
    deep_merge,
    file_layers,
    flag_layer,
    flatten,
    get_dotted,
    merge_layers,
    read_config_file,
    reset,
    set_dotted,
    source_of,
    user_cache_dir,
    user_config_file,
    workspace_config_file,
    write_config_file,
)
from agentls.settings.keys import KEYS, KeyInfo, check_base_url, key_info, nearest_key, parse_value
from agentls.settings.models import (
    BackendConfig,
    CacheConfig,
    CompactionConfig,
    CompletionConfig,
    IndexConfig,
    RetryConfig,
    Settings,
    default_backends,
)

__all__ = [
    "APP_NAME", "KEYS", "WORKSPACE_DIR", "BackendConfig", "CacheConfig", "CompactionConfig",
    "CompletionConfig",
    "ConfigError", "IndexConfig", "KeyInfo", "Layer", "LoadedSettings", "RetryConfig",
    "Settings", "api_key",
    "check_base_url", "deep_merge", "default_backends", "env_layer", "flatten", "get_dotted",
    "key_info", "load", "nearest_key", "parse_value", "read_config_file", "reset",
    "set_dotted", "set_value", "user_cache_dir", "user_config_file", "validate",
    "workspace_config_file", "write_config_file",
]


def env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    return config_files.env_layer(env, KEYS, parse_value)


@dataclass
class LoadedSettings:
    settings: Settings
    layers: list[Layer]
    # Warnings for the person (an untrusted project file's loosening keys left out).
    notices: list[str] = field(default_factory=list)

    def source_of(self, key: str) -> str:
        return source_of(self.layers, key)


def load(
    workspace: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    client: Mapping[str, Any] | None = None,
    flags: Mapping[str, Any] | None = None,
    editor_trusted: bool = False,
) -> LoadedSettings:
    """Merge every source in precedence order and validate the result.

    A workspace file the person has not trusted cannot loosen safety settings (see
    ``agentls.settings.trust``); what it tried is left out and said in ``notices``."""
    environ = os.environ if env is None else env
    layers, notices = file_layers(Settings().model_dump(mode="python"), workspace, environ,
                                  editor_trusted)
    layers.append(Layer("environment", env_layer(environ)))
    if client:
        layers.append(Layer("client", dict(client)))
    if flags:
        layers.append(flag_layer(flags))
    merged = merge_layers(layers, environ)
    settings = validate(merged, layers)
    return LoadedSettings(settings, layers, notices)


def validate(data: Mapping[str, Any], layers: Sequence[Layer] = ()) -> Settings:
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = []
        loaded = LoadedSettings(Settings(), list(layers))
        for error in exc.errors():
            # The one settings-wide check is that `backend` names a configured backend.
            key = ".".join(str(p) for p in error["loc"]) or "backend"
            message = error["msg"].removeprefix("Value error, ")
            where = f" (from {loaded.source_of(key)})" if layers else ""
            problems.append(f"{key}: {message}{where}")
        raise ConfigError(
            "invalid configuration:\n  " + "\n  ".join(problems)
            + "\nFix it with `agentls config set KEY VALUE [--workspace]` (or in its "
            "AGENTLS_* variable, when it comes from the environment), or start again from "
            "defaults with `agentls config reset [--workspace]`."
        ) from None


def api_key(backend: BackendConfig, env: Mapping[str, str] | None = None) -> str | None:
    """The backend's API key from the environment; never logged, never stored."""
    if not backend.api_key_env:
        return None
    key = (os.environ if env is None else env).get(backend.api_key_env) or None
    redaction.add_secrets([key])  # from now on the key is hidden in every output
    return key


# --- writing ----------------------------------------------------------------------------------


def set_value(path: Path, key: str, raw: str) -> Any:
    """Validate ``key = raw`` and store it in the config file at ``path``.

    The file must make sense on its own over the defaults (``backend`` names a backend it or
    the defaults configure), so it never depends on another layer to be valid.
    """
    value = parse_value(key, raw)
    data = read_config_file(path)
    set_dotted(data, key, value)
    validate(deep_merge(Settings().model_dump(mode="python"), data))
    write_config_file(path, data)
    return value
