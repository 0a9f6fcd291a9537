"""`agentls config get|set|list|path|reset`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentls.base.import_gc import imports_without_gc
from agentls.cli import exitcodes
from agentls.settings import config_files

if TYPE_CHECKING:
    from agentls.settings import config
    from agentls.settings.view import SettingsView as Reading


def _show(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _say_notices(loaded: Reading | config.LoadedSettings) -> None:
    for notice in loaded.notices:
        print(f"agentls config: warning: {notice}", file=sys.stderr)


def run_config(args: argparse.Namespace, workspace: Path) -> int:
    try:
        return _run(args, workspace)
    except config_files.ConfigError as exc:
        print(f"agentls config: {exc}", file=sys.stderr)
        return exitcodes.CONFIG_ERROR


def _run(args: argparse.Namespace, workspace: Path) -> int:
    # `path` and `reset` touch files only: they never import pydantic (config_files).
    target = (
        config_files.workspace_config_file(workspace)
        if getattr(args, "workspace", False)
        else config_files.user_config_file()
    )
    if args.action == "path":
        print(f"user:      {config_files.user_config_file()}")
        print(f"workspace: {config_files.workspace_config_file(workspace)}")
        return exitcodes.OK
    if args.action == "reset":
        backup = config_files.reset(target)
        if backup is None:
            print(f"{target} does not exist; the defaults already apply")
        else:
            print(f"moved {target} to {backup}; the defaults apply now")
        return exitcodes.OK
    if args.action == "set":
        from agentls.settings import config

        config.parse_value(args.key, args.value)  # bad keys and values touch no file
        if args.workspace:
            if not workspace.is_dir():
                print(f"agentls config: the workspace folder {workspace} does not exist; pass "
                      "an existing folder with --cwd", file=sys.stderr)
                return exitcodes.USAGE
            from agentls.engine.sessions.state_dir import ensure_state_dir

            try:
                ensure_state_dir(workspace)  # .agentls/ carries its .gitignore, as a run's does
            except OSError as exc:
                raise config.ConfigError(f"cannot create {workspace / config.WORKSPACE_DIR}: "
                                         f"{exc.strerror or exc}; check that the workspace "
                                         "folder is writable") from None
        from agentls.settings import trust as workspace_trust

        before = workspace_trust.content_hash(target) if args.workspace else None
        value = config.set_value(target, args.key, args.value)
        print(f"{args.key} = {_show(value)}  (saved in {target})")
        if args.workspace:  # your own change keeps a trust you gave the file before it
            workspace_trust.refresh_if_trusted(workspace, target, before)
            _say_notices(config.load(workspace))
        return exitcodes.OK

    reading = _reading(workspace, args.key if args.action == "get" else None)
    _say_notices(reading)
    values = config_files.flatten(reading.values)
    if args.action == "get":
        try:
            value = config_files.get_dotted(reading.values, args.key)
        except KeyError:
            print(f"agentls config: {args.key} is not set. {_unset_hint(args.key, reading)}",
                  file=sys.stderr)
            return exitcodes.CONFIG_ERROR
        print(json.dumps(value) if isinstance(value, dict) else _show(value))
        return exitcodes.OK
    if args.action == "list":
        if args.json:
            print(json.dumps(
                {k: {"value": v, "source": reading.source_of(k)} for k, v in values.items()},
                indent=2,
            ))
            return exitcodes.OK
        _print_settings(values, reading)
        return exitcodes.OK
    raise AssertionError(args.action)


def _reading(workspace: Path, key: str | None) -> Reading:
    """The settings to show: what the layers give validated field by field (settings/view),
    else loaded and validated in full, with the full check's error messages."""
    from agentls.settings import view as config_view

    # Reading imports pydantic and builds the settings models (when a layer gives a value):
    # start-up objects, left to the collector only once they are all made (base/import_gc).
    with imports_without_gc():
        view = config_view.read(workspace)
    if view is not None and (key is None or config_view.is_known_key(key)):
        return view
    from agentls.settings import config

    with imports_without_gc():
        loaded = config.load(workspace)
    if key is not None:
        config.key_info(key)  # an unknown key: the error names the nearest valid one
    return config_view.SettingsView(loaded.settings.model_dump(mode="json"), loaded.layers,
                                    loaded.notices)


def _print_settings(values: dict[str, Any], loaded: Reading) -> None:
    from rich.text import Text

    from agentls.cli.tables import for_people, new_table, print_rows, table_console

    if not for_people():  # piped: key<TAB>value<TAB>source, one line per setting
        print_rows((key, _show(value), loaded.source_of(key)) for key, value in values.items())
        return
    table = new_table()
    table.add_column("key", overflow="fold")
    table.add_column("value", overflow="fold")
    table.add_column("source", overflow="fold")
    for key, value in values.items():
        # Text cells: values such as "[...]" lists must not read as rich markup.
        table.add_row(Text(key), Text(_show(value)), Text(loaded.source_of(key)))
    table_console().print(table)


def _unset_hint(key: str, loaded: Reading) -> str:
    """What to do about a per-name key (backends.<name>.*, permissions.tools.<name>) with no
    value."""
    if key.startswith("backends."):
        name = key.split(".")[1]
        names = ", ".join(sorted(loaded.values["backends"]))
        return (f"No backend named {name!r} is configured (configured: {names}); add it with "
                f"`agentls config set backends.{name}.base_url URL`.")
    return (f"A tool without its own entry gets permissions.default "
            f"({loaded.values['permissions']['default']}); set one with "
            f"`agentls config set {key} allow|ask|deny`.")
