"""The toolbox: schemas, bad model input, permissions, truncation, failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentls.sandbox.bwrap import SandboxSettings
from agentls.tools.permission_gate import ApprovalRequest, PermissionPolicy
from agentls.tools.registry import (
    CODE_INTEL_TOOLS,
    DEFAULT_TOOLS,
    ToolBox,
    ToolContext,
    ToolDef,
    params_of,
    schema_of,
)
from agentls.tools.shell.sandboxed import ShellSandbox
from agentls.workspace.fence import Workspace


@pytest.fixture
def box(tmp_path: Path) -> ToolBox:
    (tmp_path / "a.py").write_text("print('a')\n" * 3)
    return ToolBox(ToolContext(Workspace([tmp_path])))


def test_schemas_are_plain_json_schema_and_cached(box: ToolBox) -> None:
    by_name = {s.name: s for s in box.schemas()}
    # The language servers' tools are offered only where a server covers the workspace.
    assert set(by_name) == {t.name for t in DEFAULT_TOOLS} - CODE_INTEL_TOOLS
    edit = by_name["edit_file"].parameters
    assert "$defs" not in json.dumps(edit) and "title" not in edit
    # Lean: no additionalProperties (extra arguments are refused when checked, below).
    assert "additionalProperties" not in json.dumps([s.parameters for s in box.schemas()])
    assert edit["properties"]["edits"]["items"]["required"] == ["search", "replace"]
    assert by_name["git_status"].parameters["properties"] == {}
    assert schema_of(params_of(DEFAULT_TOOLS[0])) is schema_of(params_of(DEFAULT_TOOLS[0]))


async def test_unknown_tool(box: ToolBox) -> None:
    outcome = await box.call("rm_everything", "{}")
    assert outcome.result["error"] == "UNKNOWN_TOOL" and "read_file" in outcome.result["message"]


async def test_malformed_json_returns_schema(box: ToolBox) -> None:
    outcome = await box.call("read_file", '{"path": "a.py"')
    assert outcome.arguments is None
    assert outcome.result["error"] == "INVALID_ARGUMENTS"
    assert "not valid JSON" in outcome.result["message"]
    assert outcome.result["schema"]["required"] == ["path"]


async def test_wrong_types_and_extra_fields(box: ToolBox) -> None:
    wrong = await box.call("read_file", {"path": "a.py", "start_line": "first"})
    assert wrong.result["error"] == "INVALID_ARGUMENTS" and "start_line" in wrong.result["message"]
    extra = await box.call("read_file", {"path": "a.py", "colour": "red"})
    assert extra.result["error"] == "INVALID_ARGUMENTS" and "colour" in extra.result["message"]


async def test_fence_errors_become_results(box: ToolBox) -> None:
    outcome = await box.call("read_file", {"path": "../../etc/passwd"})
    assert outcome.result["ok"] is False and outcome.result["error"] == "OUTSIDE_WORKSPACE"


def _asking_sandbox() -> ShellSandbox:
    return ShellSandbox(SandboxSettings(ask=True))


async def test_sandboxed_shell_runs_without_asking(box: ToolBox) -> None:
    outcome = await box.call("shell_exec", {"command": "echo hi"})
    assert outcome.ok and outcome.result["stdout"].strip() == "hi"
    assert outcome.result["sandbox"] == "sandboxed: no network, writes shown as a diff"


async def test_shell_is_asked_and_denied_without_a_callback(tmp_path: Path) -> None:
    box = ToolBox(ToolContext(Workspace([tmp_path]), sandbox=_asking_sandbox()))
    outcome = await box.call("shell_exec", {"command": "python -c 'print(1)'"})
    assert outcome.result["error"] == "USER_REJECTED"


async def test_shell_approval_callback(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    async def confirm(request: ApprovalRequest) -> str:
        asked.append(request)
        return "allow_once"

    box = ToolBox(ToolContext(Workspace([tmp_path]), confirm=confirm,  # type: ignore[arg-type]
                              sandbox=_asking_sandbox()))
    outcome = await box.call("shell_exec", {"command": "echo hello"})
    assert outcome.ok and outcome.result["stdout"].strip() == "hello"
    assert asked and asked[0].title == "Run `echo hello`?"
    # The sandbox line is said once, in the reason the prompt shows under its title.
    assert "sandboxed: no network, writes shown as a diff" in asked[0].reason


async def test_denied_tool_by_policy(tmp_path: Path) -> None:
    policy = PermissionPolicy(tools={"write_file": "deny"})
    box = ToolBox(ToolContext(Workspace([tmp_path]), policy=policy))
    outcome = await box.call("write_file", {"path": "x.py", "content": "x"})
    assert outcome.result["error"] == "USER_REJECTED"


async def test_long_results_are_cut_to_the_limit(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("word " * 10_000)
    box = ToolBox(ToolContext(Workspace([tmp_path]), result_limit=2_000))
    outcome = await box.call("read_file", {"path": "big.txt"})
    assert len(outcome.text) <= 2_000 and "characters omitted" in outcome.text
    assert json.loads(outcome.text)["ok"] is True  # still valid JSON


async def test_a_crashing_tool_is_reported_not_raised(tmp_path: Path) -> None:
    async def explode(ctx: ToolContext, params: object) -> dict[str, object]:
        raise RuntimeError("kaboom")

    broken = ToolDef("read_file", "broken", DEFAULT_TOOLS[1].params, explode, True)
    box = ToolBox(ToolContext(Workspace([tmp_path])), [broken])
    outcome = await box.call("read_file", {"path": "a"})
    assert outcome.result["error"] == "TOOL_FAILED" and "kaboom" in outcome.result["message"]


def test_only_limits_the_toolbox(tmp_path: Path) -> None:
    box = ToolBox(ToolContext(Workspace([tmp_path])), only=["read_file", "edit_file"])
    assert box.names() == ["read_file", "edit_file"]
    assert box.is_read_only("read_file") and not box.is_read_only("edit_file")


async def test_a_tool_that_takes_too_long_is_stopped(tmp_path: Path) -> None:
    import asyncio

    async def hang(ctx: ToolContext, params: object) -> dict[str, object]:
        await asyncio.sleep(3600)
        return {"ok": True}

    slow = ToolDef("read_file", "slow", DEFAULT_TOOLS[1].params, hang, True)
    box = ToolBox(ToolContext(Workspace([tmp_path]), tool_timeout_s=0.05), [slow])
    outcome = await box.call("read_file", {"path": "a"})
    assert outcome.result["error"] == "TOOL_TIMEOUT"


async def test_a_failing_approval_prompt_is_a_refusal(tmp_path: Path) -> None:
    async def confirm(request: ApprovalRequest) -> str:
        raise EOFError("stdin is closed")

    box = ToolBox(ToolContext(Workspace([tmp_path]), confirm=confirm,  # type: ignore[arg-type]
                              sandbox=_asking_sandbox()))
    outcome = await box.call("shell_exec", {"command": "make build"})
    assert outcome.result["error"] == "USER_REJECTED"
    assert "approval prompt failed (stdin is closed)" in outcome.result["message"]
