"""The MCP servers an ACP client brings with ``session/new`` / ``session/load``
(``mcpServers``), made into the engine's MCP server settings for that session only
(``McpHub.set_session_servers``): the same hub, sandbox (stdio servers run in bubblewrap),
fence and permission policy (their tools ask, unless the settings say otherwise) as the
configured ones. What cannot be taken is named in a note for the person."""

from __future__ import annotations

import re
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio

from agentls.settings.mcp import McpServerConfig

_NOT_NAME = re.compile(r"[^A-Za-z0-9-]+")


def session_servers(offered: list[Any]) -> tuple[dict[str, McpServerConfig], list[str]]:
    servers: dict[str, McpServerConfig] = {}
    notes: list[str] = []
    for server in offered:
        name = _name(getattr(server, "name", ""), servers)
        if isinstance(server, McpServerStdio):
            servers[name] = McpServerConfig(command=server.command, args=list(server.args),
                                            env={v.name: v.value for v in server.env})
        elif isinstance(server, HttpMcpServer):
            if server.headers:
                notes.append(f"MCP server {server.name!r} was left out: AgentLS cannot send "
                             "its HTTP headers yet (configure it in mcp.servers instead)")
                continue
            servers[name] = McpServerConfig(url=server.url)
        else:
            kind = getattr(server, "type", type(server).__name__)
            notes.append(f"MCP server {getattr(server, 'name', '?')!r} was left out: AgentLS "
                         f"connects to stdio and HTTP servers, not {kind}")
    return servers, notes


def _name(given: str, taken: dict[str, McpServerConfig]) -> str:
    """A name that fits in a tool name (``mcp__NAME__tool``): letters, digits, ``-``."""
    base = _NOT_NAME.sub("-", given).strip("-")[:28] or "server"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name
