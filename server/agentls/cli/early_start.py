"""What `agentls run` and `agentls loop` start before importing the engine (~200 ms of
Python holding the interpreter): work that waits on another process or on OpenSSL, so it
passes on the other core meanwhile. Each piece is taken where it is used, or discarded."""

from __future__ import annotations

from pathlib import Path


def start_early(workspace: Path) -> None:
    """The project facts' git commands (tools/git_prefetch.py), the listing of nested
    AGENTS.md files (tools/nested_agents.py) and the model client's TLS context
    (llm/tls.py). ``workspace`` is resolved (cli/main.py), as Workspace.roots are: the git
    commands and the listing are keyed by it."""
    from agentls.llm import tls
    from agentls.tools import git_prefetch, nested_agents

    git_prefetch.start(workspace)
    nested_agents.start(workspace)
    tls.start()
