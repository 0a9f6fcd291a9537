"""The workspace's ``.agentls/`` folder (DESIGN.md decision 9): state stays out of git through
the ``.gitignore`` AgentLS writes there; ``config.toml`` and ``instructions.md`` are meant to be
committed and shared with the team."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

STATE_DIR = ".agentls"


STATE_DB = "state.db"


# State stays out of git; config.toml and instructions.md are meant to be committed (DESIGN 9).
STATE_GITIGNORE = """\
# Written by AgentLS. Local state is ignored; config.toml and instructions.md are meant to be
# committed and shared with the team.
state.db*
index.db*
runs/
scratch/
cache/
explain/
locks/
*.bak
*.tmp
"""


# What earlier versions wrote: "*" hid config.toml too; the next one lacked locks/.
_OLD_GITIGNORES = ("*\n", "*", STATE_GITIGNORE.replace("locks/\n", ""))


def ensure_state_dir(root: Path) -> Path:
    """The workspace's ``.agentls/`` folder, with a ``.gitignore`` that keeps state out of git
    and lets config and instructions be committed. One written by an older version (``*``)
    is upgraded; one the person wrote is left alone."""
    state_dir = root / STATE_DIR
    state_dir.mkdir(parents=True, exist_ok=True)
    ignore = state_dir / ".gitignore"
    try:
        with ignore.open("x", encoding="utf-8") as handle:
            handle.write(STATE_GITIGNORE)
    except FileExistsError:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if ignore.read_text(encoding="utf-8") in _OLD_GITIGNORES:
                _replace_text(ignore, STATE_GITIGNORE)
    return state_dir


def _replace_text(path: Path, text: str) -> None:
    """Write through a temporary file and rename, so no half-written file is ever seen."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
