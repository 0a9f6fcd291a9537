"""The `mcp.*` settings: tools from Model Context Protocol servers (DESIGN.md decision 14).

A base module, so configuration need not import the tool layer; how the servers are started,
sandboxed and called lives in ``agentls.tools.mcp``.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentls.policy.permissions import Permission

SERVER_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*$")
"""A server's name goes into its tools' names (`mcp__NAME__tool`): letters, digits, `-`, `_`
(never two in a row, which would make the name ambiguous)."""


class McpServerConfig(BaseModel):
    """One MCP server, `mcp.servers.NAME`: a command (stdio) or a URL (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    command: str | None = Field(None, description="Program that starts the server over "
                                "stdio (a name on PATH or a path).",
                                examples=["mcp-server-time"])
    args: list[str] = Field(default_factory=list, description="Its arguments.",
                            examples=["--local-timezone,UTC"])
    env: dict[str, str] = Field(default_factory=dict, description="Variables set for the "
                                "server, with their values (the rest of the environment is "
                                "cleared).")
    env_vars: list[str] = Field(default_factory=list, description="Names of variables passed "
                                "from AgentLS's environment (never the backend's key).",
                                examples=["GITHUB_TOKEN"])
    url: str | None = Field(None, description="URL of a streamable-HTTP server (instead of "
                            "command).", examples=["http://localhost:8000/mcp"])
    headers: dict[str, str] = Field(default_factory=dict, description="HTTP headers sent to "
                                    "a url server, with their values (no secrets in config: "
                                    "use headers_env).")
    headers_env: dict[str, str] = Field(default_factory=dict, description="HTTP headers sent "
                                        "to a url server, each with the name of the variable "
                                        "holding its value.",
                                        examples=['{Authorization = "TRACKER_AUTH"}'])
    enabled: bool = Field(True, description="Offer this server's tools.", examples=["false"])
    sandbox: bool = Field(True, description="Start a stdio server inside the sandbox "
                          "(bubblewrap: no network, workspace read-only, no key). false runs "
                          "it directly (unsafe).", examples=["false"])
    network: bool = Field(False, description="Give the sandboxed server the network.",
                          examples=["true"])
    permission: Permission = Field("ask", description="Permission of this server's tools: "
                                   "allow, ask or deny.", examples=["allow"])
    tools: dict[str, Permission] = Field(default_factory=dict, description="Permission per "
                                         "tool (its name on the server), over `permission`.")
    start: Literal["lazy", "session"] = Field(
        "lazy", description="lazy: start on the first run that offers tools; session: start "
        "with the editor's server or the CLI run.", examples=["session"])
    timeout_s: float = Field(60.0, gt=0, description="Seconds one tool call may take.",
                             examples=[60])
    startup_timeout_s: float = Field(30.0, gt=0, description="Seconds the server may take to "
                                     "start and answer initialize.", examples=[30])
    output_limit: int = Field(8_000, ge=500, description="Characters of a tool's result "
                              "kept for the model; the rest is cut.", examples=[8000])

    @field_validator("command", "url", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value


class McpConfig(BaseModel):
    """Embedded in the settings as `mcp`."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    servers: dict[str, McpServerConfig] = Field(
        default_factory=dict, description="MCP servers by name; their tools appear as "
        "mcp__NAME__tool.")
    max_tools_in_prompt: int = Field(
        30, ge=0, description="Most MCP tools whose schemas go into a request; past it the "
        "tools most relevant to the request are listed and the rest are reached through "
        "mcp_find_tools / mcp_call_tool.", examples=[30])

    @field_validator("servers", mode="after")
    @classmethod
    def _names(cls, value: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in value:
            if not SERVER_NAME.match(name) or len(name) > 32:
                raise ValueError(
                    f"MCP server name {name!r} cannot be part of a tool name: use up to 32 "
                    "letters, digits, '-' or '_' (no '__'), e.g. 'git' or 'my-server'")
        return value
