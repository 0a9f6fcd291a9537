"""`agentls index [--status] [--rebuild]`: build or refresh the workspace's search index
(``.agentls/index.db``) with a progress bar, or report what it holds."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentls.cli import exitcodes

if TYPE_CHECKING:
    from agentls.index.service import WorkspaceSearch


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("index", help="build or refresh the search index used by "
                                 "`agentls search` and the agent's search_semantic")
    parser.add_argument("--status", action="store_true", help="report what the index holds; "
                        "change nothing")
    parser.add_argument("--rebuild", action="store_true", help="start again from an empty "
                        "index (re-read and re-embed everything)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("-C", "--cwd", type=Path, default=argparse.SUPPRESS,
                        help="workspace folder (default: the current directory)")


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MiB" if n >= 1024 * 1024 else f"{n / 1024:.0f} KiB"


def open_index(command: str, workspace: Path) -> WorkspaceSearch | int:
    """The workspace's index for `agentls index` / `agentls search`, or the exit code after
    saying why it cannot be opened (a bad config, an unwritable index)."""
    from agentls.index.db import IndexStoreError
    from agentls.index.from_settings import AUTO_HINT, open_search, provider_name
    from agentls.settings import config
    from agentls.workspace.fence import Workspace

    try:
        settings = config.load(workspace).settings
    except config.ConfigError as exc:
        print(f"agentls {command}: {exc}", file=sys.stderr)
        return exitcodes.CONFIG_ERROR
    if command == "index" and settings.index.embeddings == "auto" \
            and provider_name(settings.index) == "none":
        print(f"agentls index: note: {AUTO_HINT}", file=sys.stderr)
    try:
        return open_search(Workspace([workspace]), settings)
    except IndexStoreError as exc:
        print(f"agentls {command}: {exc}", file=sys.stderr)
        return exitcodes.ARTIFACTS_UNWRITABLE


def run(args: argparse.Namespace, workspace: Path) -> int:
    search = open_index("index", workspace)
    if isinstance(search, int):
        return search
    try:
        if args.status:
            status = search.index.status()
            if args.json:
                print(json.dumps(asdict(status)))
            else:
                when = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(status.updated_at))
                        if status.updated_at else "never")
                print(f"index:     {status.path}\nfiles:     {status.files}\n"
                      f"chunks:    {status.chunks}\nvectors:   {status.vectors} "
                      f"({status.chunks_without_vectors} chunks without one)\n"
                      f"provider:  {status.provider} {status.model}\n"
                      f"size:      {_size(status.size_bytes)}\nupdated:   {when}")
            return exitcodes.OK
        if args.rebuild:
            search.index.rebuild()
        return _update(search, args.json)
    finally:
        search.close()


def _update(search: Any, as_json: bool) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=console, transient=True, disable=as_json) as bar:
        tasks: dict[str, Any] = {}

        def progress(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(phase, total=total)
            bar.update(tasks[phase], completed=done, total=total)

        stats = search.update(progress=progress)
    search.save_vectors()  # the next `agentls search` reads them in one go
    status = search.index.status()
    if as_json:
        print(json.dumps({"update": asdict(stats), "status": asdict(status)}))
    else:
        print(f"indexed {status.files} files, {status.chunks} chunks "
              f"({stats.files_changed} files read, {stats.files_removed} removed, "
              f"{stats.vectors_added} chunks embedded) in {stats.seconds:.1f} s; "
              f"provider {status.provider} {status.model}; {_size(status.size_bytes)} "
              f"at {status.path}")
    for warning in stats.warnings:
        print(f"agentls index: warning: {warning}", file=sys.stderr)
    return exitcodes.OK
