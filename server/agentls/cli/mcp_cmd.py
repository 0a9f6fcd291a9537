"""`agentls mcp [--json] [--no-start]`: the configured MCP servers, their state and tools.

Each enabled server is started (sandboxed, as a run would start it), asked for its tools and
stopped, so the listing shows what a run would get: ``running`` with its tool count (and the
tools left out because a model API would refuse their schemas), or ``failed`` with the reason
and what to do. ``--no-start`` lists the configuration only. Exit 0 when every enabled server
started, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from agentls.cli import exitcodes
from agentls.cli.tables import for_people, print_rows
from agentls.settings import config

HELP = "list the configured MCP servers, their state and tool counts"


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("mcp", help=HELP, description=(
        "Start each enabled MCP server (mcp.servers.NAME) as a run would, list its tools, "
        "and stop it."))
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-start", action="store_true",
                        help="only list the configuration; start nothing")
    parser.add_argument("-C", "--cwd", type=Path, default=argparse.SUPPRESS,
                        help="workspace folder (default: the current directory)")


def run(args: argparse.Namespace, workspace: Path) -> int:
    try:
        loaded = config.load(workspace)
    except config.ConfigError as exc:
        print(f"agentls mcp: {exc}", file=sys.stderr)
        return exitcodes.CONFIG_ERROR
    for notice in loaded.notices:
        print(f"agentls mcp: warning: {notice}", file=sys.stderr)
    settings = loaded.settings
    if not settings.mcp.servers:
        print("no MCP server is configured; add one with `agentls config set "
              "mcp.servers.NAME.command PROGRAM` (docs/MCP.md)",
              file=sys.stderr)
        return exitcodes.OK
    rows, tools = asyncio.run(_probe(settings, workspace, start=not args.no_start))
    if args.json:
        print(json.dumps({"servers": [{**row, "tool_names": tools.get(row["name"], [])}
                                      for row in rows]}, indent=2))
    elif not for_people():  # piped: one line per server, its tools comma-separated
        print_rows((row["name"], row["transport"], row["state"],
                    row["tools"] if row["state"] == "running" else "", row["how"],
                    ",".join(tools.get(row["name"], [])), "; ".join(row["left_out"]),
                    row["error"] or "") for row in rows)
    else:
        for row in rows:
            count = f"{row['tools']} tools" if row["state"] == "running" else ""
            print(f"{row['name']:<16} {row['transport']:<6} {row['state']:<9} {count:<10} "
                  f"{row['how']}")
            for name in tools.get(row["name"], []):
                print(f"    {name}")
            for left in row["left_out"]:
                print(f"    left out: {left}")
            if row["error"]:
                print(f"    error: {row['error']}")
    failed = [r for r in rows if r["enabled"] and r["state"] in ("failed", "error")]
    return exitcodes.OK if not failed else 1


async def _probe(settings: config.Settings, workspace: Path, *, start: bool
                 ) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    from agentls.engine.mcp_tools import secret_env
    from agentls.tools.mcp.hub import McpHub
    from agentls.workspace.fence import Workspace

    hub = McpHub(settings.mcp, settings.sandbox, secret_env=secret_env(settings))
    tools: dict[str, list[str]] = {}
    try:
        if start:
            run_tools = await hub.run_tools(Workspace([workspace]), "")
            for tool in run_tools.tools:
                tools.setdefault(tool.server, []).append(
                    f"{tool.name} ({tool.permission})")
        rows = [vars(status) for status in hub.status()]
    finally:
        await hub.aclose()
    return rows, tools
