"""`agentls run PROMPT_FILE | -`: one prompt, one agent run, its changes written to disk.

The assistant's text streams to stdout; status, tool activity and retries go to stderr. The
changes are written atomically at the end (all files or none), or only shown with
``--dry-run``. README.md lists the options and exit codes.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from agentls.cli.headless import Headless, add_common_options, positive_int


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "run", help="run the agent on a prompt and write its changes (headless, for CI)",
        description="Run the agent once on the prompt in PROMPT_FILE (or stdin with -). "
        "Changes are written atomically at the end; --dry-run only shows the diff.")
    parser.add_argument("prompt", metavar="PROMPT_FILE",
                        help="file holding the prompt, or - to read it from stdin")
    add_common_options(parser)
    parser.add_argument("--max-iterations", type=positive_int, metavar="N",
                        help="most model turns in the run (config: max_iterations)")


def run(args: argparse.Namespace, workspace: Path) -> int:
    flags: dict[str, Any] = {}
    if args.max_iterations is not None:
        flags["max_iterations"] = args.max_iterations
    headless = Headless(args, workspace, command="run", source=args.prompt,
                        settings_flags=flags)
    return headless.execute(_run_once)


async def _run_once(headless: Headless) -> None:
    await headless.run_iteration(headless.prompt)
