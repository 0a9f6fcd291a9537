"""Tools from MCP servers: what AgentLS adds to a call, and what the sandbox adds to a start.

The server is ``mcp-server-time`` from PyPI (a dev dependency), started as a person would
configure it.

- Round trip: one ``get_current_time`` call through AgentLS's ToolBox (the permission check,
  the call over the sandboxed stdio connection and its stdout relay, the result converted,
  fenced, redacted and serialised for the model) against the same call on the same server
  started without AgentLS (the official SDK's ``ClientSession`` over ``stdio_client``,
  unsandboxed). Goal: <= 20 ms added (median of the paired differences, interleaved).
- Start: a sandboxed server through AgentLS (spawn, ``initialize``, ``tools/list``) against
  the same server through AgentLS with ``sandbox = false``. Goal: ratio <= 1.2. Beside it, a
  watch figure without a goal: the sandboxed start against the bare SDK's start.

Run alone: ``flock /work/heavy.lock .venv/bin/python -m bench.run bench.bench_mcp``.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from agentls.sandbox.bwrap import probe
from agentls.settings.mcp import McpConfig, McpServerConfig
from agentls.settings.sandbox import SandboxSettings
from agentls.tools.mcp.connection import McpConnection
from agentls.tools.mcp.hub import McpHub, tool_defs
from agentls.tools.mcp.launch import stdio_launch
from agentls.tools.permission_gate import PermissionPolicy
from agentls.tools.registry import ToolBox, ToolContext, ToolDef
from agentls.workspace.fence import Workspace
from bench.harness import Figure, median_ms

CALL_ROUNDS = 41
START_ROUNDS = 9
ADDED_GOAL_MS = 20.0
START_GOAL = 1.2
ARGS = {"timezone": "Europe/Paris"}


def _server_command() -> str:
    found = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))
    if found is None:
        raise RuntimeError("mcp-server-time is not installed: pip install -e '.[dev]'")
    return found


@contextlib.asynccontextmanager
async def _bare_session(command: str) -> AsyncIterator[ClientSession]:
    with open("/dev/null", "w") as errlog:
        async with stdio_client(StdioServerParameters(command=command), errlog=errlog) as (
                read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            yield session


async def _round_trip(ws: Workspace, command: str) -> Figure:
    config = McpConfig(servers={"time": McpServerConfig(command=command, permission="allow")})
    hub = McpHub(config, SandboxSettings())
    try:
        run = await hub.run_tools(ws, "")
        policy = PermissionPolicy()
        policy = policy.model_copy(update={"tools": {**policy.tools, **run.permissions}})
        box = ToolBox(ToolContext(ws, policy=policy), tool_defs(run, ToolDef))
        name = "mcp__time__get_current_time"
        async with _bare_session(command) as bare:
            async def through_agentls() -> float:
                start = time.perf_counter()
                outcome = await box.call(name, ARGS)
                assert outcome.ok, outcome.text
                return time.perf_counter() - start

            async def without() -> float:
                start = time.perf_counter()
                result = await bare.call_tool("get_current_time", ARGS)
                assert not result.is_error
                return time.perf_counter() - start

            for _ in range(3):  # warm both
                await through_agentls()
                await without()
            mine, base = [], []
            for _ in range(CALL_ROUNDS):
                base.append(await without())
                mine.append(await through_agentls())
    finally:
        await hub.aclose()
    added = median_ms([m - b for m, b in zip(mine, base, strict=True)])
    return Figure(f"MCP tool round trip (mcp-server-time, stdio) through AgentLS, sandboxed, "
                  f"vs the bare SDK (median of {CALL_ROUNDS}; {added:.2f} ms added, median "
                  "of the paired differences)", median_ms(mine), "ms", median_ms(base),
                  f"<= {ADDED_GOAL_MS:g} ms added", added <= ADDED_GOAL_MS)


async def _start_once(ws: Workspace, command: str, *, sandbox: bool) -> float:
    config = McpServerConfig(command=command, sandbox=sandbox)
    conn = McpConnection("time", config, lambda: stdio_launch(
        "time", config, SandboxSettings(), ws, secret_env="OPENAI_API_KEY"))
    start = time.perf_counter()
    try:
        await conn.start()
        took = time.perf_counter() - start
        assert conn.tools, "no tools listed"
    finally:
        await conn.aclose()
    return took


async def _bare_start(command: str) -> float:
    start = time.perf_counter()
    async with _bare_session(command):
        took = time.perf_counter() - start
    return took


async def _start_figures(ws: Workspace, command: str) -> list[Figure]:
    await _start_once(ws, command, sandbox=True)  # warm the page cache and the probe
    sandboxed: list[float] = []
    direct: list[float] = []
    bare: list[float] = []
    for _ in range(START_ROUNDS):
        direct.append(await _start_once(ws, command, sandbox=False))
        sandboxed.append(await _start_once(ws, command, sandbox=True))
        bare.append(await _bare_start(command))
    value, base = median_ms(sandboxed), median_ms(direct)
    ratio = statistics.median(s / d for s, d in zip(sandboxed, direct, strict=True))
    return [
        Figure(f"MCP server start (spawn, initialize, tools/list; mcp-server-time) sandboxed "
               f"vs sandbox = false, through AgentLS (median of {START_ROUNDS}; paired ratio "
               f"{ratio:.2f})", value, "ms", base, f"ratio <= {START_GOAL:g}",
               ratio <= START_GOAL),
        Figure(f"watch: the same sandboxed start vs the bare SDK's unsandboxed start (median "
               f"of {START_ROUNDS})", value, "ms", median_ms(bare), "", None),
    ]


async def _all(command: str) -> list[Figure]:
    with tempfile.TemporaryDirectory() as folder:
        ws = Workspace([Path(folder)])
        figures = [await _round_trip(ws, command)]
        figures += await _start_figures(ws, command)
    return figures


def run() -> list[Figure]:
    status = probe()
    if not status.available:
        print(f"bench_mcp: skipped, {status.describe()}", file=sys.stderr)
        return []
    return asyncio.run(_all(_server_command()))


def main() -> None:  # `python -m bench.bench_mcp`: print the figures
    for figure in run():
        print(figure.to_json())


if __name__ == "__main__":
    main()

