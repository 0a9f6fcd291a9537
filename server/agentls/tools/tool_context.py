"""What a tool call may use (``ToolContext``, one per run) and the shape of a tool's runner;
apart from ``registry`` so the built-in tools' code (``builtin``) can name them without
importing the registry that imports it on a tool's first call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentls.tools.output import DEFAULT_RESULT_LIMIT, DEFAULT_SHELL_OUTPUT_LIMIT
from agentls.tools.permission_gate import Confirm, PermissionPolicy, SessionGrants
from agentls.tools.shell.sandboxed import ShellSandbox
from agentls.workspace.fence import Workspace

if TYPE_CHECKING:  # the index is opened (and its modules imported) by its first search
    from agentls.index.service import WorkspaceSearch
    from agentls.langservers.servers import LangServers


@dataclass
class ToolContext:
    """Everything a tool call may use; one per run (grants last for the session)."""

    workspace: Workspace
    policy: PermissionPolicy = field(default_factory=PermissionPolicy)
    grants: SessionGrants = field(default_factory=SessionGrants)
    confirm: Confirm | None = None  # None: nobody can be asked, so `ask` means deny
    result_limit: int = DEFAULT_RESULT_LIMIT
    shell_output_limit: int = DEFAULT_SHELL_OUTPUT_LIMIT
    api_key_env: str = "OPENAI_API_KEY"
    tool_timeout_s: float = 60.0  # per call; shell_exec gets at least its own timeout + 5 s
    # Where shell_exec runs (DESIGN.md decision 11); the engine keeps one per session.
    sandbox: ShellSandbox = field(default_factory=ShellSandbox)
    # Opens the workspace's search index on first use (None: search_semantic unavailable).
    search_index: Callable[[], WorkspaceSearch] | None = None
    # The project's language servers (diagnostics, definition ...); None: none covers it.
    code_intel: LangServers | None = None


Runner = Callable[[ToolContext, Any], Awaitable[dict[str, Any]]]
