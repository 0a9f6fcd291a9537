"""The command-line options `agentls run` and `agentls loop` share, and their value types
(durations like ``90s`` or ``2m``, whole numbers above 0). argparse only: building the parser
imports nothing heavy."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$", re.IGNORECASE)


_DURATION_SCALE = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """``90s``, ``2m``, ``1h``, ``500ms`` or plain seconds, as seconds (> 0)."""
    found = _DURATION.match(text)
    if not found:
        raise argparse.ArgumentTypeError(
            f"invalid duration {text!r}: use a number with a unit, like 90s, 2m, 1h or 500ms")
    seconds = float(found.group(1)) * _DURATION_SCALE[(found.group(2) or "s").lower()]
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: it must be more than 0")
    return seconds


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a whole number above 0, got {text!r}")
    return value


def add_common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", help="backend name (see `agentls config list`)")
    parser.add_argument("--model", help="model name for the chosen backend")
    parser.add_argument("-C", "--cwd", type=Path, default=argparse.SUPPRESS,
                        help="workspace folder (default: the current directory)")
    parser.add_argument("--session", metavar="ID",
                        help="continue this session (see `agentls sessions`); default: a new one")
    parser.add_argument("--wait", action=argparse.BooleanOptionalAction, default=False,
                        help="when another process runs the session, wait for it (default: "
                             "fail with 'session busy', exit 69)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="only the assistant's text on stdout and errors on stderr")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object at the end and nothing else on stdout")
    parser.add_argument("--artifacts", action="store_true",
                        help="write meta.json, transcript.ndjson and result.json to "
                        ".agentls/runs/<id>/")
    parser.add_argument("--artifacts-dir", type=Path, metavar="DIR",
                        help="write the artifacts to DIR/<id>/ instead (implies --artifacts)")
    parser.add_argument("--no-cache", action="store_true",
                        help="do not read or write the response cache")
    parser.add_argument("-y", "--yes", action="store_true",
                        help="approve tool calls that need approval (shell commands)")
    parser.add_argument("--dry-run", action="store_true",
                        help="show the diff and write nothing")
    parser.add_argument("--timeout", type=parse_duration, metavar="DURATION",
                        help="time limit of the whole command: 90s, 2m, 1h (config: timeout_ms)")
