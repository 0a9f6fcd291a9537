"""The hub: the tools a run offers from several servers: duplicate and invalid names, schemas
left out, 120 tools listed by relevance with the rest reachable through mcp_find_tools /
mcp_call_tool under the real tool's permission, and servers a session brings (ACP)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentls.sandbox.bwrap import probe
from agentls.settings.mcp import McpConfig, McpServerConfig
from agentls.settings.sandbox import SandboxSettings
from agentls.tools.mcp.hub import CALL_TOOL, FIND_TOOLS, McpHub, tool_defs
from agentls.tools.permission_gate import ApprovalRequest, PermissionPolicy
from agentls.tools.registry import DEFAULT_TOOLS, ToolBox, ToolContext, ToolDef
from agentls.workspace.fence import Workspace

pytestmark = pytest.mark.skipif(not probe().available, reason="no sandbox here")

FAULTY = str(Path(__file__).with_name("faulty_server.py"))


def server(mode: str = "ok", **options: object) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=[FAULTY, mode], **options)  # type: ignore[arg-type]


async def test_same_tool_names_on_two_servers_and_invalid_names(tmp_path: Path) -> None:
    hub = McpHub(McpConfig(servers={"a": server(), "b": server("odd-names"),
                                    "c": server("bad-schema")}))
    try:
        run = await hub.run_tools(Workspace([tmp_path]), "echo")
    finally:
        await hub.aclose()
    names = {t.name for t in run.tools}
    assert {"mcp__a__echo", "mcp__b__echo", "mcp__c__echo"} <= names
    assert "mcp__b__get_weather_now" in names  # get.weather/now
    long = [n for n in names if n.startswith("mcp__b__xxx")]
    assert len(long) == 1 and len(long[0]) == 64
    assert "mcp__c__broken" not in names
    assert any("'c': 1 tool(s) left out" in note and "strnig" in note for note in run.notes)
    assert run.lazy and len(run.listed) == 30  # 41 tools over the default 30


async def test_many_tools_are_listed_by_relevance_and_the_rest_found_and_called(
        tmp_path: Path) -> None:
    config = McpConfig(servers={"big": server("many", permission="ask",
                                              tools={"kubernetes_action_4": "allow"})},
                       max_tools_in_prompt=10)
    hub = McpHub(config)
    asked: list[ApprovalRequest] = []

    async def confirm(request: ApprovalRequest) -> str:
        asked.append(request)
        return "allow_once"

    ws = Workspace([tmp_path])
    try:
        run = await hub.run_tools(ws, "show me the weather forecast")
        assert run.lazy and len(run.listed) == 10
        assert all("weather" in name for name in run.listed)
        policy = PermissionPolicy()
        policy = policy.model_copy(update={"tools": {**policy.tools, **run.permissions}})
        box = ToolBox(ToolContext(ws, policy=policy, confirm=confirm),  # type: ignore[arg-type]
                      [*DEFAULT_TOOLS, *tool_defs(run, ToolDef)])
        offered = {s.name for s in box.schemas()}
        assert {FIND_TOOLS, CALL_TOOL} <= offered and "mcp__big__kubernetes_action_4" \
            not in offered
        found = await box.call(FIND_TOOLS, {"query": "kubernetes"})
        hits = json.loads(found.text)["tools"]
        assert hits[0]["name"].startswith("mcp__big__kubernetes_action_")
        assert "properties" in hits[0]["parameters"]
        allowed = await box.call(CALL_TOOL, {"name": "mcp__big__kubernetes_action_4",
                                             "arguments": {"value": "x"}})
        assert allowed.name == "mcp__big__kubernetes_action_4"
        assert allowed.result["content"] == "tool 4: x" and asked == []
        called = await box.call(CALL_TOOL, {"name": "mcp__big__billing_action_1",
                                            "arguments": {"value": "y"}})
        assert called.result["content"] == "tool 1: y"
        assert [a.tool for a in asked] == ["mcp__big__billing_action_1"]  # asked as itself
        listed = next(iter(run.listed))
        direct = await box.call(CALL_TOOL, {"name": listed, "arguments": {"value": "z"}})
        assert direct.result["error"] == "UNKNOWN_TOOL" and "call it directly" in \
            direct.result["message"]
    finally:
        await hub.aclose()


async def test_servers_a_session_brings_join_only_its_runs(tmp_path: Path) -> None:
    hub = McpHub(McpConfig(servers={"shared": server()}), SandboxSettings())
    hub.set_session_servers("s1", {"mine": server()})
    ws = Workspace([tmp_path])
    try:
        mine = {t.server for t in (await hub.run_tools(ws, "", session_id="s1")).tools}
        other = {t.server for t in (await hub.run_tools(ws, "", session_id="s2")).tools}
        assert mine == {"shared", "mine"} and other == {"shared"}
        assert {(s.name, s.session) for s in hub.status()} == {("shared", None),
                                                                ("mine", "s1")}
        await hub.close_session("s1")
        assert {s.name for s in hub.status()} == {"shared"}
        with pytest.raises(ValueError, match="cannot be part of a tool name"):
            hub.set_session_servers("s3", {"bad__name": server()})
    finally:
        await hub.aclose()


async def test_changed_settings_restart_the_server(tmp_path: Path) -> None:
    hub = McpHub(McpConfig(servers={"a": server()}))
    ws = Workspace([tmp_path])
    try:
        first = (await hub.run_tools(ws, "")).tools[0].connection
        again = (await hub.run_tools(ws, "")).tools[0].connection
        assert again is first  # reused across runs
        hub.configure(McpConfig(servers={"a": server(timeout_s=5)}), SandboxSettings(), None)
        third = (await hub.run_tools(ws, "")).tools[0].connection
        assert third is not first and first.state == "stopped"
    finally:
        await hub.aclose()


async def test_start_session_starts_only_those_servers_and_runs_reuse_them(
        tmp_path: Path) -> None:
    hub = McpHub(McpConfig(servers={"early": server(start="session"), "late": server()}))
    ws = Workspace([tmp_path])
    try:
        await hub.start_session_servers(ws)
        assert {s.name: s.state for s in hub.status()} == {"early": "running",
                                                           "late": "stopped"}
        early = next(t for t in (await hub.run_tools(ws, "")).tools if t.server == "early")
        assert early.connection.restarts == 0 and early.connection.start_seconds is not None
        assert {s.name: s.state for s in hub.status()} == {"early": "running",
                                                           "late": "running"}
    finally:
        await hub.aclose()


async def test_resources_are_read_through_one_tool_and_fenced(tmp_path: Path) -> None:
    hub = McpHub(McpConfig(servers={"notes": server(permission="allow")}))
    ws = Workspace([tmp_path])
    try:
        run = await hub.run_tools(ws, "")
        [reader] = [t for t in run.tools if t.kind == "resource"]
        assert reader.name == "mcp__notes__read_resource"
        assert "notes://team/readme (team readme)" in reader.description
        policy = PermissionPolicy()
        policy = policy.model_copy(update={"tools": {**policy.tools, **run.permissions}})
        box = ToolBox(ToolContext(ws, policy=policy), tool_defs(run, ToolDef))
        read = await box.call(reader.name, {"uri": "notes://team/readme"})
        assert read.result["ok"] and "Deploys happen on Tuesdays." in read.result["content"]
        outside = await box.call(reader.name, {"uri": "file:///etc/hostname"})
        assert "a file outside" not in outside.result["content"]
        assert outside.result["withheld"][0].startswith("file:///etc/hostname")
        missing = await box.call(reader.name, {})
        assert missing.result["error"] == "INVALID_ARGUMENTS"
    finally:
        await hub.aclose()


async def test_a_server_that_says_its_tools_changed_is_listed_again(tmp_path: Path) -> None:
    hub = McpHub(McpConfig(servers={"a": server(permission="allow")}))
    ws = Workspace([tmp_path])
    try:
        run = await hub.run_tools(ws, "")
        assert "mcp__a__late_tool" not in {t.name for t in run.tools}
        grow = next(t for t in run.tools if t.name == "mcp__a__grow")
        await grow.connection.call("grow", {"name": "late_tool"})
        names = {t.name for t in (await hub.run_tools(ws, "")).tools}
        assert "mcp__a__late_tool" in names
    finally:
        await hub.aclose()
