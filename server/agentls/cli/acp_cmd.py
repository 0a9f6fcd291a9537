"""`agentls acp`: the agent over the Agent Client Protocol (stdio), for Zed, JetBrains, Emacs
agent-shell, avante.nvim, CodeCompanion and any other ACP client."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(commands: Any) -> None:
    acp = commands.add_parser(
        "acp", help="run the agent over the Agent Client Protocol (stdio), for Zed, JetBrains, "
                    "Emacs and Neovim ACP clients")
    acp.add_argument("--log-file", type=Path, metavar="PATH",
                     help="write the log to this file instead of stderr")
    acp.add_argument("-v", "--verbose", action="count", default=0, help="log more")


def run(args: argparse.Namespace, workspace: Path) -> int:
    from agentls.acp.sdk_import import import_acp

    import_acp()  # before anything imports the SDK: its models build on first use
    from agentls.acp.main import main

    return main(str(args.log_file) if args.log_file else None, verbose=bool(args.verbose))
