"""The MCP part of a run's toolbox: which servers' tools it offers, under which permissions.

The hub (``agentls.tools.mcp.hub``) starts and keeps the servers; this joins their tools to
the built-in ones for one run, tells the person about servers that did not start, and lays
the MCP tools' permissions (``mcp.servers.NAME.permission`` / ``.tools``, or an explicit
``permissions.tools."mcp__NAME__tool"``) over the policy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentls.engine.events import Frontend, StatusEvent
from agentls.settings.config import Settings
from agentls.tools.permission_gate import PermissionPolicy
from agentls.tools.registry import ToolDef
from agentls.workspace.fence import Workspace

if TYPE_CHECKING:  # imported by the first run with an MCP server (engine/loop/agent.py)
    from agentls.tools.mcp.hub import McpHub


def secret_env(settings: Settings) -> str:
    return settings.active_backend.api_key_env or "OPENAI_API_KEY"


def wanted(settings: Settings, hub: McpHub | None, session_id: str) -> bool:
    """Whether a run offers MCP tools (``hub`` None: not made yet, so no session servers)."""
    return bool(settings.mcp.servers) or (hub is not None and hub.has_session_servers(session_id))


async def mcp_tools_for_run(settings: Settings, hub: McpHub, workspace: Workspace, prompt: str,
                            session_id: str, policy: PermissionPolicy, frontend: Frontend
                            ) -> tuple[list[ToolDef], PermissionPolicy]:
    """The run's MCP ToolDefs and the policy that knows their permissions."""
    from agentls.tools.mcp.convert import PREFIX
    from agentls.tools.mcp.hub import tool_defs

    hub.configure(settings.mcp, settings.sandbox, secret_env(settings))
    explicit = {k: v for k, v in policy.tools.items() if k.startswith(PREFIX)}
    run = await hub.run_tools(workspace, prompt, session_id=session_id, explicit=explicit)
    for note in run.notes:
        frontend.on_event(StatusEvent(message=note, warning=True))
    if not run.tools:
        return [], policy
    merged = policy.model_copy(update={"tools": {**policy.tools, **run.permissions}})
    return tool_defs(run, ToolDef), merged
