"""What `agentls run` and `agentls loop` start before importing the engine (~200 ms of
Python holding the interpreter): work that waits on another process or on OpenSSL, so it
passes on the other core meanwhile. Each piece is taken where it is used, or discarded."""

from __future__ import annotations

import os
from pathlib import Path


def start_early(workspace: Path) -> None:
    """The project facts' git commands (tools/git_prefetch.py) and the model client's TLS
    context (llm/tls.py)."""
    from agentls.llm import tls
    from agentls.tools import git_prefetch

    git_prefetch.start(Path(os.path.realpath(workspace)))
    tls.start()
