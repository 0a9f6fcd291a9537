"""Settings from the editor: initializationOptions and ``workspace/configuration`` section
``agentls``, re-read on ``workspace/didChangeConfiguration``.

The client section holds engine keys (the same as ``agentls config``, see agentls.settings.config),
the LSP-only keys below under ``lsp``, and sections other features register
(``register_client_section``). Each value is checked on its own: a bad one is reported once
in a single ``window/showMessage`` naming the key and the expected form, logged, and left
out so its default applies; the server never fails because of a setting.

Pydantic and agentls.settings.config are imported inside ``resolve``, which runs in a thread after
``initialize`` has been answered, so start-up stays as fast as a bare pygls server.
"""

from __future__ import annotations

import asyncio
import difflib
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

from lsprotocol import types as lsp

from agentls.lsp.services.resolved_settings import LspSettings, ResolvedSettings

if TYPE_CHECKING:
    from agentls.lsp.services.server_context import ServerContext
    from agentls.settings.config import Settings

log = logging.getLogger(__name__)

SECTION = "agentls"  # the workspace/configuration section
LSP_TABLE = "lsp"  # LSP-only keys live in agentls.lsp.*
# initializationOptions.workspaceTrusted: the editor runs only in trusted workspaces (VS Code).
WORKSPACE_TRUSTED = "workspaceTrusted"


_LSP_KEYS: dict[str, str] = {
    "chat_requests_per_minute": "a whole number of chat requests per minute, at least 1 "
                                "(e.g. 10)",
    "chat_queue_limit": "a whole number of chat requests that may wait per session, at "
                        "least 1 (e.g. 32)",
}

SectionCheck = Callable[[Any], list[str]]
"""Checks a client section another feature owns; returns problems, each naming the key."""

_CLIENT_SECTIONS: dict[str, SectionCheck] = {}


def register_client_section(name: str, check: SectionCheck) -> None:
    """Claim a top-level key of the ``agentls`` client section for an LSP feature (code
    actions' ``actions``, say): it is kept out of the engine settings, checked with ``check``
    and its problems are reported with the others. Read the value from
    ``server.client_settings``."""
    _CLIENT_SECTIONS[name] = check


def resolve(root: Path | None, client: Mapping[str, Any], *,
            editor_trusted: bool = False) -> ResolvedSettings:
    """Validate the client section key by key and load the engine settings over it.
    Blocking (imports pydantic, reads config files): run it in a thread.
    ``editor_trusted``: the editor runs only in workspaces the person trusted (VS Code's
    Workspace Trust), so the project's config file may loosen safety settings."""
    from agentls.settings import config

    problems: list[str] = []
    notices: list[str] = []
    engine_part = {k: v for k, v in client.items()
                   if k != LSP_TABLE and k not in _CLIENT_SECTIONS}
    editor_lsp, engine_lsp = _split_lsp_table(client.get(LSP_TABLE, {}))
    if engine_lsp:  # the agent's language servers (lsp.servers ...) are engine settings
        engine_part[LSP_TABLE] = engine_lsp
    good = _valid_engine_keys(engine_part, problems)
    lsp_settings = _lsp_settings(editor_lsp, problems)
    for key in _CLIENT_SECTIONS.keys() & client.keys():
        problems += _checked_section(key, client[key])
    settings: Settings | None = None
    # Values fine alone but not together, or a bad file: leave out the culprit, keep the rest
    # (a broken .agentls/config.toml must not cost the editor's own settings).
    for workspace, editor in ((root, good), (None, good), (root, {}), (None, {})):
        try:
            loaded = config.load(workspace, client=editor, editor_trusted=editor_trusted)
            settings, notices = loaded.settings, loaded.notices
            break
        except config.ConfigError as exc:
            problem = _first_lines(str(exc))
            if problem not in problems:
                problems.append(problem)
    return ResolvedSettings(settings or config.Settings(), lsp_settings, dict(client), problems,
                            notices)


def _defaults(client: Mapping[str, Any], error: Exception) -> ResolvedSettings:
    from agentls.settings.config import Settings

    return ResolvedSettings(Settings(), LspSettings(), dict(client),
                            [f"the settings could not be read ({error}); see the log"])


def _checked_section(key: str, value: Any) -> list[str]:
    try:
        return _CLIENT_SECTIONS[key](value)
    except Exception as exc:  # a feature's checker must not stop the others' settings
        log.exception("checking setting %s failed", key)
        return [f"`{SECTION}.{key}` could not be checked ({exc})"]


def _split_lsp_table(raw: Any) -> tuple[Any, dict[str, Any]]:
    """``agentls.lsp`` holds the editor's own keys and the engine's `lsp.*` settings (the
    agent's language servers: servers, detect ...): the two parts."""
    from agentls.settings.defaults import DEFAULTS

    if not isinstance(raw, Mapping):
        return raw, {}
    engine_keys = DEFAULTS[LSP_TABLE].keys()
    return ({k: v for k, v in raw.items() if k not in engine_keys},
            {k: v for k, v in raw.items() if k in engine_keys})


def _lsp_settings(raw: Any, problems: list[str]) -> LspSettings:
    if not isinstance(raw, Mapping):
        problems.append(f"`{SECTION}.{LSP_TABLE}` must be a table of settings, got {raw!r}")
        return LspSettings()
    values: dict[str, int] = {}
    for key, value in raw.items():
        name = f"{SECTION}.{LSP_TABLE}.{key}"
        if key not in _LSP_KEYS:
            problems.append(_unknown(name, [f"{SECTION}.{LSP_TABLE}.{k}" for k in _LSP_KEYS]))
        elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
            problems.append(f"`{name}` = {value!r} is not valid; expected {_LSP_KEYS[key]}")
        else:
            values[key] = value
    return LspSettings(**values)


def _valid_engine_keys(data: Mapping[str, Any], problems: list[str]) -> dict[str, Any]:
    """The engine keys whose values are valid on their own, as a nested dict."""
    from agentls.settings import config

    good: dict[str, Any] = {}
    for key, value in _leaves(data):
        problem = _engine_problem(key, value)
        if problem is None:
            config.set_dotted(good, key, value)
        else:
            problems.append(problem)
    return good


def _leaves(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Dotted keys down to the first known setting (a dict-valued setting stays whole)."""
    from agentls.settings import config

    out: list[tuple[str, Any]] = []
    for name, value in data.items():
        key = f"{prefix}{name}"
        try:
            config.key_info(key)
        except config.ConfigError:
            if isinstance(value, Mapping) and value:
                out += _leaves(value, f"{key}.")
                continue
        out.append((key, value))
    return out


def _engine_problem(key: str, value: Any) -> str | None:
    from pydantic import TypeAdapter, ValidationError

    from agentls.settings import config

    try:
        info = config.key_info(key)
    except config.ConfigError:
        return _unknown(f"{SECTION}.{key}", [f"{SECTION}.{k}" for k in config.KEYS]
                        + [f"{SECTION}.{LSP_TABLE}.{k}" for k in _LSP_KEYS])
    adapter: TypeAdapter[Any] = TypeAdapter(cast(Any, Annotated[info.annotation, info.info]))
    try:
        adapter.validate_python(value)
    except ValidationError as exc:
        problem = "; ".join(str(e["msg"]).rstrip(".") for e in exc.errors())
        expected = (info.info.description or "").rstrip(".")
        if info.info.examples:
            expected += f" (e.g. {info.info.examples[0]!r})"
        return f"`{SECTION}.{key}` = {value!r} is not valid ({problem}); expected: {expected}"
    return None


def _unknown(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean `{close[0]}`?" if close else ""
    return f"`{name}` is not an AgentLS setting{hint}"


def _first_lines(message: str) -> str:
    # config's own advice names CLI commands; an editor user fixes the value in the editor.
    kept = []
    for line in message.splitlines():
        clauses = [c for c in line.strip().split("; ") if c and "`agentls " not in c]
        if clauses:
            kept.append("; ".join(clauses))
    return " ".join(kept)


# --- the LSP side -------------------------------------------------------------------------


async def fetch_client_section(ls: ServerContext) -> dict[str, Any]:
    """initializationOptions, with ``workspace/configuration`` (or the last pushed settings)
    on top."""
    from agentls.settings.config_files import (
        deep_merge,  # light: agentls.settings.config imports pydantic
    )

    merged: dict[str, Any] = dict(_as_dict(ls.initialization_options))
    merged.pop(WORKSPACE_TRUSTED, None)  # the editor's word on trust, not a setting
    pulled: Any = ls.pushed_settings
    workspace_caps = ls.client_capabilities.workspace
    if workspace_caps is not None and workspace_caps.configuration:
        try:
            answer = await ls.workspace_configuration_async(lsp.ConfigurationParams(
                items=[lsp.ConfigurationItem(section=SECTION, scope_uri=ls.root_uri)]))
            pulled = answer[0] if answer else None
        except Exception as exc:  # a client failing here still gets the other sources
            log.warning("workspace/configuration failed (%s); using initializationOptions", exc)
    if isinstance(pulled, Mapping):
        merged = deep_merge(merged, _as_dict(pulled))
    return merged


async def reload(ls: ServerContext) -> ResolvedSettings:
    client: dict[str, Any] = {}
    try:
        client = await fetch_client_section(ls)
    finally:  # waiters on the section must not wait forever for a failed fetch
        ls.client_fetched(client)
    trusted = _as_dict(ls.initialization_options).get(WORKSPACE_TRUSTED) is True
    try:
        resolved = await asyncio.to_thread(resolve, ls.root, client, editor_trusted=trusted)
    except Exception as exc:  # a bug here must not leave the server without settings
        log.exception("loading the settings failed")
        resolved = await asyncio.to_thread(_defaults, client, exc)
    ls.apply_settings(resolved)
    report(ls, resolved.problems, resolved.notices)
    return resolved


def report(ls: ServerContext, problems: list[str], notices: Sequence[str] = ()) -> None:
    """One showMessage and one log line per new set of problems and notices (a repeat is
    not re-shown)."""
    text = "; ".join(problems)
    key = "\n".join([text, *notices])
    if key == ls.reported_settings_problems:
        return
    ls.reported_settings_problems = key
    for notice in notices:
        log.warning("%s", notice)
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                     message=f"AgentLS: {notice}"))
    if not problems:
        return
    message = (f"AgentLS settings: {text}. The defaults are used for these until you fix "
               "them in your editor's AgentLS settings.")
    log.warning("%s", message)
    ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=message))


def _as_dict(value: Any) -> dict[str, Any]:
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else {}


def setup(server: ServerContext) -> None:
    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: ServerContext, params: lsp.InitializedParams) -> None:
        await ls.ready()
        ls.spawn(ls.warm_up())  # project facts ahead of the first chat, in the background

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: ServerContext, params: lsp.DidChangeConfigurationParams
    ) -> None:
        pushed = params.settings.get(SECTION) if isinstance(params.settings, Mapping) else None
        ls.pushed_settings = pushed if isinstance(pushed, Mapping) else None
        await ls.reload_settings()
