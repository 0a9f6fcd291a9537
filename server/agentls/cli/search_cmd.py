"""`agentls search "query" [--json]`: find code by meaning from the terminal (refreshes the
index first, like the agent's search_semantic)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from agentls.cli import exitcodes


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("search", help="find code by meaning in the workspace")
    parser.add_argument("query", help="what you are looking for, in words")
    parser.add_argument("-k", "--top-k", type=int, default=8, help="results to show (8)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-update", action="store_true",
                        help="search the index as it is, without refreshing it first")
    parser.add_argument("-C", "--cwd", type=Path, default=argparse.SUPPRESS,
                        help="workspace folder (default: the current directory)")


def run(args: argparse.Namespace, workspace: Path) -> int:
    from agentls.cli.index_cmd import open_index

    if not 1 <= args.top_k <= 100:
        print("agentls search: --top-k must be between 1 and 100", file=sys.stderr)
        return exitcodes.USAGE
    search = open_index("search", workspace)
    if isinstance(search, int):
        return search
    try:
        warnings = [] if args.no_update else search.update().warnings
        result = search.search(args.query, args.top_k, interactive=True)
    finally:
        search.close()
    if result.warning:
        warnings.append(result.warning)
    if args.json:
        print(json.dumps({"query": args.query, "mode": result.mode,
                          "reranked_by": result.reranked_by,
                          "results": [h.to_dict() for h in result.hits],
                          "warnings": warnings}))
    else:
        _print(result, args.query)
    for warning in warnings:
        print(f"agentls search: warning: {warning}", file=sys.stderr)
    return exitcodes.OK


def _print(result: Any, query: str) -> None:
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False)
    if not result.hits:
        console.print(f"no results for {query!r}")
        return
    for n, hit in enumerate(result.hits, 1):
        head = Text(f"{n}. {hit.path}:{hit.start_line}-{hit.end_line}", style="bold")
        if hit.symbol:
            head.append(f"  {hit.symbol}", style="cyan")
        head.append(f"  ({hit.match}, {hit.score:.4f})", style="dim")
        console.print(head)
        if hit.also:  # the file's other matching chunks
            console.print(Text("   also " + ", ".join(
                f"{start}-{end}" + (f" {symbol}" if symbol else "")
                for start, end, symbol in hit.also), style="dim"))
        console.print(Text(hit.snippet), soft_wrap=True)
        console.print()
    how = f", re-ranked by {result.reranked_by}" if result.reranked_by else ""
    console.print(Text(f"{result.mode} search{how}, {result.seconds * 1000:.0f} ms",
                       style="dim"))
