"""`agentls config get|set|list|path|reset`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from agentls import config
from agentls.cli import exitcodes


def _show(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _effective(loaded: config.LoadedSettings) -> dict[str, Any]:
    return config.flatten(loaded.settings.model_dump(mode="json"))


def run_config(args: argparse.Namespace, workspace: Path) -> int:
    try:
        return _run(args, workspace)
    except config.ConfigError as exc:
        print(f"agentls config: {exc}", file=sys.stderr)
        return exitcodes.CONFIG_ERROR


def _run(args: argparse.Namespace, workspace: Path) -> int:
    target = (
        config.workspace_config_file(workspace)
        if getattr(args, "workspace", False)
        else config.user_config_file()
    )
    if args.action == "path":
        print(f"user:      {config.user_config_file()}")
        print(f"workspace: {config.workspace_config_file(workspace)}")
        return exitcodes.OK
    if args.action == "reset":
        backup = config.reset(target)
        if backup is None:
            print(f"{target} does not exist; the defaults already apply")
        else:
            print(f"moved {target} to {backup}; the defaults apply now")
        return exitcodes.OK
    if args.action == "set":
        config.key_info(args.key)  # unknown keys fail before the file is read
        value = config.set_value(target, args.key, args.value)
        print(f"{args.key} = {_show(value)}  (saved in {target})")
        return exitcodes.OK

    loaded = config.load(workspace)
    values = _effective(loaded)
    if args.action == "get":
        config.key_info(args.key)
        try:
            value = config.get_dotted(loaded.settings.model_dump(mode="json"), args.key)
        except KeyError:
            print(f"agentls config: {args.key} is not set (no such backend?)", file=sys.stderr)
            return exitcodes.CONFIG_ERROR
        print(json.dumps(value) if isinstance(value, dict) else _show(value))
        return exitcodes.OK
    if args.action == "list":
        if args.json:
            print(json.dumps(
                {k: {"value": v, "source": loaded.source_of(k)} for k, v in values.items()},
                indent=2,
            ))
            return exitcodes.OK
        width = max(len(k) for k in values)
        for key, value in values.items():
            print(f"{key:<{width}}  {_show(value):<28}  {loaded.source_of(key)}")
        return exitcodes.OK
    raise AssertionError(args.action)
