"""The effective settings for reading (``agentls config get|list``), without pydantic.

The same layers as ``config.load`` (defaults, user file, trusted-screened workspace file,
environment) merged the same way, then checked against the generated table of defaults and
key shapes (``config_defaults``). Whatever that table cannot judge on its own (a key with a
validator of its own, a value pydantic would have to coerce, a stale table) returns ``None``,
and the caller reads through ``config.load``, which validates and words the errors. So a read
answers exactly as the full check would, only sooner; writes always validate fully.
"""

from __future__ import annotations

import copy
import hashlib
import math
import os
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentls.settings import defaults as config_defaults
from agentls.settings.config_files import (
    Layer,
    deep_merge,
    env_settings,
    file_layers,
    flag_layer,
    merge_layers,
    set_dotted,
    source_of,
)

if TYPE_CHECKING:
    from agentls.settings.models import Settings

# config_defaults.SOURCE_HASH is the hash of these, in this order (devtools/config_table.py).
_SOURCES = ("settings/models.py", "policy/permissions.py", "settings/sandbox.py")  # under agentls/


class _Unjudged(Exception):
    """Something only the full check (pydantic) can decide."""


@dataclass
class SettingsView:
    """What ``config.LoadedSettings`` offers a reader: the values as ``model_dump(mode="json")``
    would give them, where each came from, and the warnings for the person."""

    values: dict[str, Any]
    layers: list[Layer]
    notices: list[str] = field(default_factory=list)
    # The layers merged before the check: which keys were given (pydantic's fields_set).
    given: dict[str, Any] = field(default_factory=dict)

    def source_of(self, key: str) -> str:
        return source_of(self.layers, key)


def table_is_current() -> bool:
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    try:
        for name in _SOURCES:
            digest.update((package / name).read_bytes())
    except OSError:
        return False
    return digest.hexdigest() == config_defaults.SOURCE_HASH


def _matching(key: str, known: list[str]) -> str | None:
    """The entry of ``known`` that names ``key``, ``<name>`` standing for any name."""
    if key in known:
        return key
    parts = key.split(".")
    for entry in known:
        pattern = entry.split(".")
        if len(pattern) == len(parts) and all(
                p == w or p == "<name>" for p, w in zip(pattern, parts, strict=True)):
            return entry
    return None


def shape_of(key: str) -> dict[str, Any] | None:
    """The shape of a dotted key, ``<name>`` standing for any name the person picks."""
    entry = _matching(key, list(config_defaults.SHAPES))
    return None if entry is None else config_defaults.SHAPES[entry]


def is_known_key(key: str) -> bool:
    """Whether ``agentls config get|set`` takes ``key`` (as ``config_keys.key_info`` does)."""
    return _matching(key, config_defaults.KEYS) is not None


def read(workspace: Path | None, env: Mapping[str, str] | None = None,
         flags: Mapping[str, Any] | None = None) -> SettingsView | None:
    """The effective settings, or ``None`` when only ``config.load`` can decide them.
    A config file that is not valid TOML raises ``ConfigError`` as ``config.load`` does.
    ``flags``: the command line's dotted keys, on top, as ``config.load(flags=...)``."""
    if not table_is_current():
        return None
    environ = os.environ if env is None else env
    layers, notices = file_layers(copy.deepcopy(config_defaults.DEFAULTS), workspace, environ)
    try:
        layers.append(Layer("environment", _env_layer(environ)))
        if flags:
            layers.append(flag_layer(flags))
        merged = merge_layers(layers, environ)
        values = _checked(merged)
    except (_Unjudged, TypeError, AttributeError):
        return None
    return SettingsView(values, layers, notices, merged)


def settings_of(view: SettingsView) -> Settings:
    """The settings models holding ``view``'s values, made without validating them again
    (the view only answers for values the full check accepts, as config.load would hold
    them; the models' schemas are built only if something validates later). Each model
    records the keys that were given, as validation does (``model_fields_set``)."""
    from agentls.settings.models import Settings

    return _construct(Settings, copy.deepcopy(view.values), view.given)


def _construct(model: Any, values: dict[str, Any], given: Any) -> Any:
    from pydantic import BaseModel

    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        value = values[name]
        part = given.get(name) if isinstance(given, Mapping) else None
        kind = info.annotation
        item = typing.get_args(kind)[1] if typing.get_origin(kind) is dict else None
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            value = _construct(kind, value, part)
        elif isinstance(item, type) and issubclass(item, BaseModel):
            value = {entry: _construct(item, fields_of, part.get(entry)
                                       if isinstance(part, Mapping) else None)
                     for entry, fields_of in value.items()}
        fields[name] = value
    given_names = set(given) & set(model.model_fields) if isinstance(given, Mapping) else set()
    return model.model_construct(given_names, **fields)


# --- the environment ---------------------------------------------------------------------------


def _env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for _name, key, raw in env_settings(env, config_defaults.KEYS):
        shape = shape_of(key)
        if shape is None:
            raise _Unjudged(key)
        set_dotted(data, key, _from_text(key, shape, raw))
    if env.get("OPENAI_BASE_URL"):
        set_dotted(data, "backends.openai.base_url", env["OPENAI_BASE_URL"])
    return data


_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)")
_TRUE = {"1", "true", "yes", "on", "t", "y"}
_FALSE = {"0", "false", "no", "off", "f", "n"}


def _from_text(key: str, shape: dict[str, Any], raw: str) -> Any:
    """A string from the environment as the value its key takes, where that is plain."""
    text = raw.strip()
    if shape.get("nullable") and text.lower() in ("none", "null"):
        return None
    kind = shape["type"]
    if key.endswith(".base_url"):
        # As config_keys.check_base_url: an http(s) URL with a host; kept as written.
        if not _is_base_url(text):
            raise _Unjudged(key)  # its own check, with its own words
        return raw
    if _matching(key, sorted(_NO_KEY_VARIABLE)) is not None:
        return raw  # judged with the rest (_leaf)
    if kind == "opaque":
        raise _Unjudged(key)  # its own check, with its own words
    if kind == "bool":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise _Unjudged(key)
    if kind == "int" and _INT.fullmatch(text):
        return int(text)
    if kind == "float" and _FLOAT.fullmatch(text):
        return float(text)
    if kind in ("int", "float"):
        raise _Unjudged(key)
    if kind == "list[str]":
        if text.startswith("["):
            raise _Unjudged(key)  # JSON arrays: let the full parser read them
        return [item.strip() for item in raw.split(",") if item.strip()]
    return raw  # str and choice: checked with the rest


# --- checking the merged layers against the table ----------------------------------------------


def _backend_exists(values: Mapping[str, Any]) -> bool:
    return values["backend"] in values["backends"]


def _completion_backend_exists(values: Mapping[str, Any]) -> bool:
    name = values["completion"]["backend"]
    return not name or name in values["backends"]


def _next_edit_backend_exists(values: Mapping[str, Any]) -> bool:
    name = values["next_edit"]["backend"]
    return not name or name in values["backends"]


# The models' whole-model checks (config_defaults.CHECKS), as plain functions: True = valid.
JUDGED_CHECKS = {
    "Settings._backend_exists": _backend_exists,
    "Settings._completion_backend_exists": _completion_backend_exists,
    "Settings._next_edit_backend_exists": _next_edit_backend_exists,
}


def _checked(merged: Mapping[str, Any]) -> dict[str, Any]:
    if any(name not in JUDGED_CHECKS for name in config_defaults.CHECKS):
        raise _Unjudged("a check config_view does not know")  # config.load judges all
    values = _section(merged, config_defaults.DEFAULTS, "")
    for name in config_defaults.CHECKS:
        if not JUDGED_CHECKS[name](values):
            raise _Unjudged(name)  # invalid: the full check words the error
    return values


def _section(data: Mapping[str, Any], defaults: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    if not isinstance(data, Mapping) or set(data) - set(defaults):
        raise _Unjudged(prefix)  # an unknown key: the full check names the nearest one
    out: dict[str, Any] = {}
    for name, default in defaults.items():
        key = f"{prefix}{name}"
        value = data.get(name, default)
        named = config_defaults.NAMED_DEFAULTS.get(key)
        if named is not None:
            out[name] = {entry: _section(fields, deep_merge(named, default.get(entry, {})),
                                         f"{key}.<name>.") if isinstance(fields, Mapping)
                         else _raise(key)
                         for entry, fields in value.items()}
        elif key in config_defaults.SHAPES or value == default:
            out[name] = default if value == default else _leaf(key, value)
        elif isinstance(default, dict):
            out[name] = _section(value, default, f"{key}.")
        else:
            raise _Unjudged(key)
    return out


def _raise(key: str) -> Any:
    raise _Unjudged(key)


def _is_base_url(url: str) -> bool:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


# The keys naming an environment variable that holds a key: "", "none" and "null" mean no
# variable (the models' _no_key_variable validators), any other text is the name.
_NO_KEY_VARIABLE = frozenset({"backends.<name>.api_key_env", "index.embedding_api_key_env"})


def _leaf(key: str, value: Any) -> Any:
    shape = config_defaults.SHAPES[key]
    kind = shape["type"]
    if key in _NO_KEY_VARIABLE and isinstance(value, str):
        return None if value.strip().lower() in ("", "none", "null") else value
    if value is None:
        if shape.get("nullable"):
            return None
        raise _Unjudged(key)
    if kind == "bool" and type(value) is bool:
        return value
    if kind == "str" and isinstance(value, str):
        return value
    if kind == "choice" and isinstance(value, str) and value in shape["choices"]:
        return value
    if kind == "list[str]" and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    if kind == "int" and type(value) is int:
        return _bounded(key, shape, value)
    if kind == "float" and type(value) in (int, float) and math.isfinite(value):
        return _bounded(key, shape, float(value))
    raise _Unjudged(key)


def _bounded(key: str, shape: Mapping[str, Any], value: float) -> Any:
    ok = (value > shape.get("gt", -math.inf) and value >= shape.get("ge", -math.inf)
          and value < shape.get("lt", math.inf) and value <= shape.get("le", math.inf))
    if not ok:
        raise _Unjudged(key)
    return value
