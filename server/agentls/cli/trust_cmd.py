"""`agentls trust [--revoke | --list]`: let this project's `.agentls/config.toml` loosen safety
settings (its backend URL and key variable, the sandbox, permissions). See
``agentls.settings.trust`` for what an untrusted file may and may not change."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from agentls.cli import exitcodes
from agentls.settings import config_files
from agentls.settings import trust as workspace_trust

HELP = "trust this project's .agentls/config.toml (its backend URL, sandbox and permissions)"


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("trust", help=HELP, description=(
        "A project's .agentls/config.toml comes with every clone, so until you trust the "
        "folder it may only make safety settings stricter. Trusting records the folder and "
        "the file's current content in your user config directory; if the file changes "
        "(a git pull), you are asked to trust it again."))
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--revoke", action="store_true", help="stop trusting this folder")
    group.add_argument("--list", action="store_true", help="list the trusted folders")
    parser.add_argument("-C", "--cwd", type=Path, default=argparse.SUPPRESS,
                        help="workspace folder (default: the current directory)")


def run(args: argparse.Namespace, workspace: Path) -> int:
    if args.list:
        folders = workspace_trust.trusted_folders()
        for folder in folders:
            print(folder)
        if not folders:
            print("no folder is trusted", file=sys.stderr)
        return exitcodes.OK
    if not workspace.is_dir():
        print(f"agentls trust: {workspace} is not a folder; pass the project with -C/--cwd",
              file=sys.stderr)
        return exitcodes.USAGE
    if args.revoke:
        if workspace_trust.revoke(workspace):
            print(f"{workspace} is no longer trusted")
        else:
            print(f"{workspace} was not trusted; nothing changed")
        return exitcodes.OK
    config_file = config_files.workspace_config_file(workspace)
    try:
        data = config_files.read_config_file(config_file)
        workspace_trust.trust(workspace, config_file)
    except config_files.ConfigError as exc:
        print(f"agentls trust: {exc}", file=sys.stderr)
        return exitcodes.CONFIG_ERROR
    except OSError as exc:
        print(f"agentls trust: cannot record the trust in {workspace_trust.trust_file()}: "
              f"{exc.strerror or exc}; check that folder is writable", file=sys.stderr)
        return exitcodes.ARTIFACTS_UNWRITABLE
    what = (f"its {config_file} as it is now" if data
            else f"{config_file} does not exist yet; one written later must be trusted again")
    print(f"trusted {workspace}: {what}")
    return exitcodes.OK
