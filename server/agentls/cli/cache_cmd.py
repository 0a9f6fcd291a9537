"""`agentls cache stats|clear`."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import asdict
from pathlib import Path

from agentls.cli import exitcodes
from agentls.llm.cache import CacheUnavailable
from agentls.llm.pool import open_cache
from agentls.settings import config


def run_cache(args: argparse.Namespace, workspace: Path) -> int:
    try:
        settings = config.load(workspace).settings
    except config.ConfigError as exc:
        print(f"agentls cache: {exc}", file=sys.stderr)
        return exitcodes.CONFIG_ERROR
    try:
        cache = open_cache(settings)
    except CacheUnavailable as exc:
        if args.action == "clear":
            return _remove_damaged(exc.directory)
        print(f"agentls cache: {exc}", file=sys.stderr)
        return exitcodes.ARTIFACTS_UNWRITABLE
    try:
        if args.action == "stats":
            stats = cache.stats()
            if args.json:
                print(json.dumps(asdict(stats)))
            else:
                print(f"directory: {stats.directory}")
                print(f"entries:   {stats.entries}")
                print(f"size:      {stats.size_bytes / 1024:.1f} KiB")
                print(f"hits:      {stats.hits}")
                print(f"misses:    {stats.misses}")
            return exitcodes.OK
        removed = cache.clear()
        print(f"removed {removed} cached responses from {cache.directory}")
        return exitcodes.OK
    finally:
        cache.close()


def _remove_damaged(directory: Path) -> int:
    """`cache clear` on a cache that cannot be opened: remove its folder; the next request
    starts a new one."""
    try:
        shutil.rmtree(directory)
    except FileNotFoundError:
        pass
    except OSError as exc:
        print(f"agentls cache: cannot remove the damaged cache folder {directory}: "
              f"{exc.strerror or exc}; delete it yourself", file=sys.stderr)
        return exitcodes.ARTIFACTS_UNWRITABLE
    print(f"removed the damaged cache folder {directory}; a new cache starts with the next "
          "request")
    return exitcodes.OK
