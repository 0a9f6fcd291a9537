"""Every MCP server of one engine, and the tools a run offers from them.

The hub lives as long as the engine (the editor's server, one CLI run): servers start on the
first run that offers tools (or at once, ``start = "session"``), are reused by every later
run, and end with the hub. A front-end that brings its own servers for one session (ACP's
``session/new`` ``mcpServers``) hands them to ``set_session_servers``; they join that
session's runs only, and end with ``close_session``.

Many tools: when the enabled servers list more than ``mcp.max_tools_in_prompt`` tools, a run
lists the ones most relevant to its request (words of the request against each tool's name
and description) and two more tools, ``mcp_find_tools`` (search the others by words; answers
their schemas) and ``mcp_call_tool`` (call one of them by name). A call through
``mcp_call_tool`` is judged, asked and shown under the real tool's name.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentls.policy.permissions import Permission
from agentls.settings.mcp import McpConfig, McpServerConfig
from agentls.settings.sandbox import SandboxSettings
from agentls.tools.mcp import convert
from agentls.tools.mcp.connection import McpConnection, McpServerError
from agentls.tools.mcp.launch import stdio_launch
from agentls.tools.mcp.relevance import CALL_TOOL, McpTool, find_tools, most_relevant, words
from agentls.tools.output import fail
from agentls.workspace.fence import Workspace

log = logging.getLogger(__name__)

FIND_TOOLS = "mcp_find_tools"


class McpToolParams(BaseModel):
    """Arguments of an MCP tool: checked by the server against its own schema."""

    model_config = ConfigDict(extra="allow")


class FindToolsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, description="What the tool should do, in words.")


class CallToolParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="The tool's name, as mcp_find_tools gave it.")
    arguments: dict[str, Any] = Field(default_factory=dict,
                                      description="Its arguments, matching its schema.")


@dataclass
class RunTools:
    """What one run gets from the hub."""

    tools: list[McpTool]  # every usable tool
    listed: set[str]  # names whose schemas go into the request
    permissions: dict[str, Permission]
    notes: list[str]  # for the person: servers that did not start, tools left out

    @property
    def lazy(self) -> bool:
        return len(self.listed) < len(self.tools)


@dataclass
class ServerStatus:
    name: str
    transport: str  # "stdio" | "http"
    enabled: bool
    state: str
    how: str  # sandboxed / not sandboxed / remote
    tools: int
    left_out: list[str]
    error: str | None
    session: str | None = None  # set for a server one session brought (ACP)


class McpHub:
    """The engine's MCP servers."""

    def __init__(self, config: McpConfig | None = None, sandbox: SandboxSettings | None = None,
                 *, secret_env: str | None = None) -> None:
        self.config = config or McpConfig()
        self.sandbox = sandbox or SandboxSettings()
        self.secret_env = secret_env
        self._connections: dict[tuple[str, str], McpConnection] = {}  # (session, name)
        self._roots: dict[tuple[str, str], tuple[Any, ...]] = {}
        self._session_servers: dict[str, dict[str, McpServerConfig]] = {}
        self._left_out: dict[tuple[str, str], list[str]] = {}
        self._retired: list[McpConnection] = []

    # -- configuration -------------------------------------------------------------------

    def configure(self, config: McpConfig, sandbox: SandboxSettings,
                  secret_env: str | None) -> None:
        """New settings: servers whose configuration changed are stopped (and start again,
        as configured now, when next needed)."""
        changed_sandbox = sandbox != self.sandbox or secret_env != self.secret_env
        self.config, self.sandbox, self.secret_env = config, sandbox, secret_env
        for key, conn in list(self._connections.items()):
            session, name = key
            wanted = self._server_config(session, name)
            if wanted is None or wanted != conn.config or changed_sandbox:
                self._retired.append(self._connections.pop(key))

    def set_session_servers(self, session_id: str,
                            servers: Mapping[str, McpServerConfig]) -> None:
        """Servers one session brings (ACP ``session/new`` ``mcpServers``), over the
        configured ones of the same name, for that session's runs only."""
        McpConfig(servers=dict(servers))  # the same name rules as configured servers
        self._session_servers[session_id] = dict(servers)
        for key in [k for k in self._connections if k[0] == session_id]:
            self._retired.append(self._connections.pop(key))

    def has_session_servers(self, session_id: str) -> bool:
        return bool(self._session_servers.get(session_id))

    async def close_session(self, session_id: str) -> None:
        self._session_servers.pop(session_id, None)
        for key in [k for k in self._connections if k[0] == session_id]:
            self._retired.append(self._connections.pop(key))
        await self.close_retired()

    def _servers(self, session_id: str | None) -> dict[tuple[str, str], McpServerConfig]:
        out = {("", n): c for n, c in self.config.servers.items()}
        if session_id and session_id in self._session_servers:
            for name, config in self._session_servers[session_id].items():
                out.pop(("", name), None)
                out[(session_id, name)] = config
        return out

    def _server_config(self, session: str, name: str) -> McpServerConfig | None:
        if session:
            return self._session_servers.get(session, {}).get(name)
        return self.config.servers.get(name)

    # -- connections ---------------------------------------------------------------------

    def _connection(self, key: tuple[str, str], config: McpServerConfig,
                    ws: Workspace) -> McpConnection:
        conn = self._connections.get(key)
        if conn is not None and self._roots.get(key) != ws.roots:
            self._retired.append(self._connections.pop(key))
            conn = None
        if conn is None:
            name = key[1]
            launch: Callable[[], Any] | None = None
            if config.command is not None:
                sandbox, secret = self.sandbox, self.secret_env

                def launch() -> Any:
                    return stdio_launch(name, config, sandbox, ws, secret_env=secret)
            conn = self._connections[key] = McpConnection(name, config, launch)
            self._roots[key] = ws.roots
        return conn

    async def close_retired(self) -> None:
        retired, self._retired = self._retired, []
        await asyncio.gather(*(c.aclose() for c in retired), return_exceptions=True)

    async def aclose(self) -> None:
        self._retired.extend(self._connections.values())
        self._connections.clear()
        await self.close_retired()

    async def start_session_servers(self, ws: Workspace, session_id: str | None = None) -> None:
        """Start the servers configured with ``start = "session"`` (errors: in the status)."""
        await self._start([k for k, c in self._servers(session_id).items()
                           if c.enabled and c.start == "session" and _usable(c) is None], ws,
                          session_id)

    async def _start(self, keys: Sequence[tuple[str, str]], ws: Workspace,
                     session_id: str | None) -> dict[tuple[str, str], str]:
        servers = self._servers(session_id)
        failures: dict[tuple[str, str], str] = {}

        async def one(key: tuple[str, str]) -> None:
            try:
                await self._connection(key, servers[key], ws).start()
            except McpServerError as exc:
                failures[key] = str(exc)

        await asyncio.gather(*(one(k) for k in keys))
        return failures

    # -- a run's tools -------------------------------------------------------------------

    async def run_tools(self, ws: Workspace, prompt: str, *,
                        session_id: str | None = None,
                        explicit: Mapping[str, Permission] | None = None) -> RunTools:
        """Start what must start, and the tools this run offers. ``explicit``: permissions
        the person set for MCP tool names under ``permissions.tools`` (they win)."""
        await self.close_retired()
        servers = self._servers(session_id)
        notes: list[str] = []
        keys: list[tuple[str, str]] = []
        for key, config in servers.items():
            if not config.enabled:
                continue
            problem = _usable(config)
            if problem:
                notes.append(f"MCP server {key[1]!r} is not used: {problem}")
                continue
            keys.append(key)
        failures = await self._start(keys, ws, session_id)
        notes += [f"MCP server {key[1]!r} is unavailable this turn: {message}"
                  for key, message in failures.items()]
        tools: list[McpTool] = []
        taken: set[str] = set()
        for key in keys:
            if key in failures:
                continue
            conn = self._connections[key]
            await conn.refresh_tools()
            config = servers[key]
            left_out: list[str] = []
            for server_tool in conn.tools:
                try:
                    schema = convert.trim_schema(server_tool.input_schema)
                except ValueError as exc:
                    left_out.append(f"{server_tool.name}: {exc}")
                    continue
                name = convert.tool_name(key[1], server_tool.name, taken)
                permission = config.tools.get(server_tool.name, config.permission)
                if explicit and name in explicit:
                    permission = explicit[name]
                if conn.note.startswith("not sandboxed") and permission == "allow":
                    permission = "ask"  # like an unsandboxed shell command: always asked
                description = convert.description(key[1], server_tool.name,
                                                  server_tool.description)
                tools.append(McpTool(name, key[1], server_tool.name, description, schema,
                                     permission, conn, words(f"{server_tool.name} "
                                                              f"{server_tool.description}")))
            if conn.resources:
                tools.append(_resource_tool(key[1], config, conn, taken))
            self._left_out[key] = left_out
            if left_out:
                notes.append(f"MCP server {key[1]!r}: {len(left_out)} tool(s) left out, their "
                             f"schemas would be refused by the model API: "
                             + "; ".join(left_out[:3]))
        usable = [t for t in tools if t.permission != "deny"]
        listed = {t.name for t in most_relevant(usable, prompt, self.config.max_tools_in_prompt)}
        permissions = {t.name: t.permission for t in tools}
        if len(listed) < len(usable):
            permissions[FIND_TOOLS] = "allow"
        return RunTools(usable, listed, permissions, notes)

    def status(self) -> list[ServerStatus]:
        """Every configured (and session) server, for ``agentls mcp`` and the editors."""
        out: list[ServerStatus] = []
        keys = list(self._servers(None))
        keys += [(s, n) for s, servers in self._session_servers.items() for n in servers]
        for key in keys:
            config = self._server_config(*key)
            if config is None:
                continue
            conn = self._connections.get(key)
            problem = _usable(config)
            state: str = conn.state if conn is not None else ("error" if problem else "stopped")
            if not config.enabled:
                state = "disabled"
            how = conn.note if conn is not None and conn.note else (
                "remote (streamable HTTP)" if config.url else
                ("sandboxed" if config.sandbox and self.sandbox.mode != "off"
                 else "not sandboxed"))
            error = problem or (conn.error if conn is not None else None)
            out.append(ServerStatus(
                key[1], "http" if config.url and not config.command else "stdio",
                config.enabled, state, how, len(conn.tools) if conn is not None else 0,
                self._left_out.get(key, []), error, key[0] or None))
        return out


def _usable(config: McpServerConfig) -> str | None:
    if config.command and config.url:
        return "both command and url are set: keep one (command for stdio, url for HTTP)"
    if not config.command and not config.url:
        return "neither command nor url is set"
    return None


def _resource_tool(server: str, config: McpServerConfig, conn: McpConnection,
                   taken: set[str]) -> McpTool:
    """``mcp__NAME__read_resource``: the server's resources, read by URI (the first 20 are
    named in its description)."""
    shown = "; ".join(f"{r.uri}" + (f" ({r.name})" if r.name and r.name != r.uri else "")
                      for r in conn.resources[:20])
    more = f" and {len(conn.resources) - 20} more" if len(conn.resources) > 20 else ""
    description = convert.description(server, "read_resource", f"Read one of this server's "
                                      f"resources by URI: {shown}{more}.")
    schema = {"type": "object", "properties": {"uri": {
        "type": "string", "description": "The resource's URI, as listed."}},
        "required": ["uri"]}
    name = convert.tool_name(server, "read_resource", taken)
    permission = config.tools.get("read_resource", config.permission)
    return McpTool(name, server, "read_resource", description, schema, permission, conn,
                   words(f"read resource {shown}"), kind="resource")


async def call(tool: McpTool, arguments: dict[str, Any], ws: Workspace) -> dict[str, Any]:
    """One MCP tool call, as a tool result the model reads."""
    try:
        if tool.kind == "resource":
            uri = arguments.get("uri")
            if not isinstance(uri, str) or not uri:
                return fail("INVALID_ARGUMENTS", f"{tool.name} needs `uri`, one of the "
                            "resources its description lists.")
            read = await tool.connection.read(uri)
            result: Any = convert.resource_result(read)
        else:
            result = await tool.connection.call(tool.tool, arguments)
    except McpServerError as exc:
        return fail("MCP_SERVER_ERROR", str(exc))
    try:
        return convert.result_to_dict(result, ws, tool.connection.config.output_limit)
    except Exception:  # a malformed result must not end the run: tell the model
        log.exception("MCP result of %s could not be read", tool.name)
    return fail("MCP_BAD_RESULT", f"{tool.name} answered with a result AgentLS could not read; "
                "the failure has been logged.")


def tool_defs(run: RunTools, defs_type: Any) -> list[Any]:
    """The run's MCP tools as ``ToolDef``s (``defs_type``: registry.ToolDef, passed in so the
    registry need not know MCP): the listed ones with their schemas, the others reachable
    through ``mcp_call_tool``."""
    out: list[Any] = []
    by_name = {t.name: t for t in run.tools}

    def runner(tool: McpTool) -> Callable[[Any, Any], Any]:
        async def run_one(ctx: Any, params: Any) -> dict[str, Any]:
            arguments = params.model_dump() if isinstance(params, BaseModel) else dict(params)
            return await call(tool, arguments, ctx.workspace)
        return run_one

    for tool in run.tools:
        out.append(defs_type(tool.name, tool.description, McpToolParams, runner(tool), False,
                             schema=tool.schema, timeout_s=tool.connection.config.timeout_s + 5,
                             result_limit=tool.connection.config.output_limit + 2_000,
                             listed=tool.name in run.listed))
    if run.lazy:
        hidden = [by_name[n] for n in by_name if n not in run.listed]

        async def find(ctx: Any, params: FindToolsParams) -> dict[str, Any]:
            return find_tools(hidden, params.query)

        async def forward(ctx: Any, params: CallToolParams) -> dict[str, Any]:
            raise AssertionError("the ToolBox runs the named tool itself")

        out.append(defs_type(FIND_TOOLS, f"Find more MCP tools ({len(hidden)} not listed "
                             "here, from servers " + ", ".join(sorted({t.server for t in hidden}))
                             + ") by what they do; answers their names and parameters.",
                             FindToolsParams, find, True))
        out.append(defs_type(CALL_TOOL, "Call an MCP tool that mcp_find_tools found, by name "
                             "with its arguments.", CallToolParams, forward, False,
                             forwards=True))
    return out
