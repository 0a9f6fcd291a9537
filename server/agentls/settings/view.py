"""The effective settings for reading (``agentls config get|list``, ``agentls run``), checked by
the settings models themselves, only as far as the layers give values.

The same layers as ``config.load`` (defaults, user file, trusted-screened workspace file,
environment, command line) merged the same way. The defaults are the models' own
(``settings/defaults.py``, generated from them); a top-level setting that no layer gives is its
default and needs no check, so with no config file and no ``AGENTLS_*`` variable nothing
imports pydantic. Each setting a layer gives is validated by pydantic with its field's own
annotation, constraints and nested models (a ``TypeAdapter`` per given field, the rules of
``settings/models.py``: there is no second copy of them), then the ``Settings`` model's own
whole-model checks run on the result. Whatever fails returns ``None`` and the caller reads
through ``config.load``, which validates the whole model and words the errors; a model rule
this cannot run field by field (a field validator on ``Settings`` itself, a whole-model
check that is not ``mode="after"``) also returns ``None``. Writes always validate fully.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentls.settings import defaults
from agentls.settings.config_files import (
    Layer,
    env_layer,
    file_layers,
    flag_layer,
    merge_layers,
    source_of,
)

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from agentls.settings.models import Settings

# defaults.SOURCE_HASH is the hash of these, in this order (devtools/config_table.py).
_SOURCES = ("settings/models.py", "policy/permissions.py", "settings/sandbox.py",
            "settings/mcp.py")  # under agentls/


@dataclass
class SettingsView:
    """What ``config.LoadedSettings`` offers a reader: the values as ``model_dump(mode="json")``
    would give them, where each came from, and the warnings for the person."""

    values: dict[str, Any]
    layers: list[Layer]
    notices: list[str] = field(default_factory=list)
    # The validated models, when a layer gave something (else made from the defaults).
    settings: Settings | None = None

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
    return digest.hexdigest() == defaults.SOURCE_HASH


def is_known_key(key: str) -> bool:
    """Whether ``agentls config get|set`` takes ``key`` (as ``settings.keys.key_info`` does),
    ``<name>`` standing for any name the person picks."""
    if key in defaults.KEYS:
        return True
    parts = key.split(".")
    return any(len(pattern) == len(parts) and all(
        p == w or (p == "<name>" and w) for p, w in zip(pattern, parts, strict=True))
        for pattern in (entry.split(".") for entry in defaults.KEYS))


def _parse_value(key: str, raw: str) -> Any:
    from agentls.settings.keys import parse_value  # pydantic: only when a variable is set

    return parse_value(key, raw)


def read(workspace: Path | None, env: Mapping[str, str] | None = None,
         flags: Mapping[str, Any] | None = None) -> SettingsView | None:
    """The effective settings, or ``None`` when only ``config.load`` can decide them (a value
    the models refuse: config.load words why). A config file that is not valid TOML, or an
    ``AGENTLS_*`` variable its key refuses, raises ``ConfigError`` as ``config.load`` does.
    ``flags``: the command line's dotted keys, on top, as ``config.load(flags=...)``."""
    if not table_is_current():
        return None
    environ = os.environ if env is None else env
    layers, notices = file_layers(copy.deepcopy(defaults.DEFAULTS), workspace, environ)
    layers.append(Layer("environment", env_layer(environ, defaults.KEYS, _parse_value)))
    if flags:
        layers.append(flag_layer(flags))
    merged = merge_layers(layers, environ)
    given = {name for layer in layers[1:] for name in layer.data}
    if not given:
        return SettingsView(merged, layers, notices)
    settings = _validated(merged, given)
    if settings is None:
        return None
    return SettingsView(_dumped(settings, given, merged), layers, notices, settings)


def settings_of(view: SettingsView) -> Settings:
    """The settings models holding ``view``'s values: the validated ones, or, when no layer
    gave anything, the defaults made without validating them again (the models' schemas are
    built only if something validates later)."""
    if view.settings is not None:
        return view.settings
    from agentls.settings.models import Settings

    return typing.cast("Settings", _construct(Settings, copy.deepcopy(view.values),
                                              view.values))


# --- validating what the layers give, with the models' own rules ------------------------------

_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def _adapter(name: str) -> TypeAdapter[Any]:
    """The validator of one top-level setting: its field's annotation and constraints (a
    nested model brings all of its own rules), built once per process."""
    adapter = _ADAPTERS.get(name)
    if adapter is None:
        from pydantic import TypeAdapter

        from agentls.settings.models import Settings

        info = Settings.model_fields[name]
        adapter = _ADAPTERS[name] = TypeAdapter(
            typing.cast(Any, typing.Annotated[info.annotation, info]))
    return adapter


def _validated(merged: Mapping[str, Any], given: set[str]) -> Settings | None:
    from pydantic import ValidationError

    from agentls.settings.models import Settings

    decorators = Settings.__pydantic_decorators__
    checks = list(decorators.model_validators.values())
    if (set(merged) - set(Settings.model_fields) or decorators.field_validators
            or any(check.info.mode != "after"
                   or len(inspect.signature(check.func).parameters) != 1 for check in checks)):
        return None  # an unknown key, or a rule only the whole model applies: config.load
    fields: dict[str, Any] = {}
    try:
        for name, info in Settings.model_fields.items():
            if name in given:
                fields[name] = _adapter(name).validate_python(merged[name])
            else:  # the default, as the models made it
                fields[name] = _construct_value(info.annotation, copy.deepcopy(merged[name]),
                                                merged[name])
        settings = Settings.model_construct(set(merged), **fields)
        for check in checks:  # the whole-model checks, as validation runs them
            check.func(settings)
    except (ValidationError, ValueError, TypeError, AttributeError, KeyError):
        return None
    return settings


def _dumped(settings: Settings, given: set[str], merged: Mapping[str, Any]) -> dict[str, Any]:
    """``settings.model_dump(mode="json")``, dumping only the given fields (the others are the
    defaults table's values already)."""
    return {name: _adapter(name).dump_python(getattr(settings, name), mode="json")
            if name in given else copy.deepcopy(merged[name])
            for name in type(settings).model_fields}


def _construct_value(kind: Any, value: Any, given: Any) -> Any:
    from pydantic import BaseModel

    item = typing.get_args(kind)[1] if typing.get_origin(kind) is dict else None
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return _construct(kind, value, given)
    if isinstance(item, type) and issubclass(item, BaseModel):
        return {entry: _construct(item, fields_of, given.get(entry)
                                  if isinstance(given, Mapping) else None)
                for entry, fields_of in value.items()}
    return value


def _construct(model: Any, values: dict[str, Any], given: Any) -> Any:
    """A model holding ``values`` (the defaults table's, valid by construction) without
    validating them; it records the keys that were given, as validation does."""
    fields = {name: _construct_value(info.annotation, values[name],
                                     given.get(name) if isinstance(given, Mapping) else None)
              for name, info in model.model_fields.items()}
    given_names = set(given) & set(model.model_fields) if isinstance(given, Mapping) else set()
    return model.model_construct(given_names, **fields)

