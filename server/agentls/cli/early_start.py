"""What `agentls run` and `agentls loop` start before importing the engine (~200 ms of
Python holding the interpreter): work that waits on another process or on OpenSSL, so it
passes on the other core meanwhile. Each piece is taken where it is used, or discarded."""

from __future__ import annotations

import threading
from pathlib import Path


def start_early(workspace: Path) -> None:
    """The project facts' git commands (tools/git/prefetch.py, spawned from a thread of
    their own), the model client's TLS context (llm/tls.py) and the platform string its
    request headers carry. ``workspace`` is resolved (cli/main.py), as Workspace.roots are:
    the git commands are keyed by it."""
    import platform

    from agentls.llm import tls
    from agentls.tools.git import prefetch as git_prefetch

    git_prefetch.start_soon(workspace)
    tls.start()
    # The openai client's first request sends platform.platform(), which on Linux and macOS
    # runs `uname -p` (a process spawn, waited for); the standard library keeps the answer,
    # so asked here it is ready when the request is built. (Imported in this thread: two
    # threads importing one module at once can deadlock.)
    threading.Thread(target=platform.platform, name="agentls-platform").start()
