"""The index of dotted settings keys (``cache.ttl_s``, ``backends.<name>.model``): looking a
key up, suggesting the nearest one, and turning a command-line string into a valid value."""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from agentls.settings.config_files import ConfigError
from agentls.settings.models import Settings


@dataclass(frozen=True)
class KeyInfo:
    key: str  # dotted; backends.<name>.field for per-backend keys
    info: FieldInfo
    annotation: Any


def _model_keys(model: type[BaseModel], prefix: str = "") -> Iterator[KeyInfo]:
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from _model_keys(annotation, f"{prefix}{name}.")
        elif typing.get_origin(annotation) is dict:
            # A table keyed by names the person picks: backends.<name>.*, permissions.tools.<name>
            value = typing.get_args(annotation)[1]
            if isinstance(value, type) and issubclass(value, BaseModel):
                yield from _model_keys(value, f"{prefix}{name}.<name>.")
            else:
                yield KeyInfo(f"{prefix}{name}.<name>", FieldInfo(description=info.description),
                              value)
        else:
            yield KeyInfo(f"{prefix}{name}", info, annotation)


KEYS: dict[str, KeyInfo] = {k.key: k for k in _model_keys(Settings)}


def _named_key(key: str) -> KeyInfo | None:
    """The entry of KEYS that names ``key``, ``<name>`` standing for any non-empty name the
    person picks (backends.work.model is backends.<name>.model)."""
    parts = key.split(".")
    for known, info in KEYS.items():
        pattern = known.split(".")
        if len(pattern) == len(parts) and all(
                p == w or (p == "<name>" and w) for p, w in zip(pattern, parts, strict=True)):
            return info
    return None


def key_info(key: str) -> KeyInfo:
    """The field behind a dotted key; ``ConfigError`` listing the valid keys otherwise."""
    if key in KEYS:
        return KEYS[key]
    found = _named_key(key)
    if found is not None:
        return found
    hint = ""
    if "api_key" in key and not key.endswith("api_key_env"):
        hint = ("API keys are never stored in configuration: put the key in the environment "
                "variable named by backends.<name>.api_key_env (default OPENAI_API_KEY).\n")
    nearest = nearest_key(key)
    if nearest is not None and not hint:
        hint = f"Did you mean {nearest}?\n"
    valid = "\n  ".join(KEYS)
    raise ConfigError(f"unknown key {key!r}.\n{hint}Valid keys:\n  {valid}")


def nearest_key(key: str) -> str | None:
    """The valid key closest to a mistyped one (``cache.ttl`` -> ``cache.ttl_s``), with the
    person's own name in place of ``<name>`` (``backends.work.modle`` -> ``...work.model``)."""
    import difflib

    parts = key.split(".")
    candidates: list[str] = []
    for known in KEYS:
        pattern = known.split(".")
        if len(pattern) == len(parts):
            known = ".".join(p if w == "<name>" else w for w, p in zip(pattern, parts, strict=True))
        candidates.append(known)
    found = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


def check_base_url(key: str, url: str) -> None:
    """A base URL must be an http(s) URL with a host: ``localhost:8000/v1`` is not one."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme in ("http", "https") and parts.netloc:
        return
    guess = f"https://{url.split('://', 1)[1]}" if "://" in url else f"http://{url}"
    raise ConfigError(
        f"invalid value {url!r} for {key}: a base URL starts with http:// or https:// and "
        f"names a host.\nExample: agentls config set {key} {guess.rstrip('/')}"
        + ("" if guess.rstrip("/").endswith("/v1") else "/v1"))


def parse_value(key: str, raw: str) -> Any:
    """Turn a command-line or environment string into a valid value for ``key``."""
    info = key_info(key)
    if key.endswith(".base_url"):
        check_base_url(key, raw.strip())
    value: Any = raw
    if raw.strip().lower() in ("none", "null") and _accepts_none(info.annotation):
        value = None
    elif typing.get_origin(info.annotation) is list:
        # A list on a command line: a JSON array, or items separated by commas.
        try:
            value = json.loads(raw) if raw.lstrip().startswith("[") else [
                item.strip() for item in raw.split(",") if item.strip()]
        except json.JSONDecodeError:
            value = raw
    adapter = _adapter(info)
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        problem = "; ".join(e["msg"].rstrip(".") for e in exc.errors())
        example = info.info.examples[0] if info.info.examples else _first_choice(info.annotation)
        suggestion = f"\nExample: agentls config set {key} {example}" if example is not None else ""
        raise ConfigError(f"invalid value {raw!r} for {key}: {problem}.{suggestion}") from None


_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def _adapter(info: KeyInfo) -> TypeAdapter[Any]:
    """The validator of one key's values, built once per process (a run reads the
    environment's settings more than once)."""
    adapter = _ADAPTERS.get(info.key)
    if adapter is None:
        adapter = _ADAPTERS[info.key] = TypeAdapter(
            cast(Any, Annotated[info.annotation, info.info]))
    return adapter


def _accepts_none(annotation: Any) -> bool:
    return type(None) in getattr(annotation, "__args__", ())


def _first_choice(annotation: Any) -> Any:
    """An example for a key without one: the first allowed value of a ``Literal``."""
    if typing.get_origin(annotation) is Literal:
        return typing.get_args(annotation)[0]
    return None
