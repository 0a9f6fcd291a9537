"""The model's language-server tools: compact answers about the pending workspace, the
fence, and clear words when no server covers the files (real basedpyright, sandboxed)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.unit.langservers.conftest import basedpyright

from agentls.langservers.servers import LangServers
from agentls.sandbox.bwrap import probe
from agentls.settings.models import LangServerConfig, LspConfig
from agentls.settings.sandbox import SandboxSettings
from agentls.tools.registry import ToolBox, ToolContext
from agentls.workspace.fence import Workspace

pytestmark = pytest.mark.skipif(not probe().available, reason="no sandbox here")


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (root / "lib.py").write_text("def greet(name: str) -> str:\n    return 'hi ' + name\n")
    (root / "app.py").write_text("from lib import greet\n\nprint(greet('x'))\n")
    (root / ".env").write_text("TOKEN=secret\n")
    return Workspace([root])


@pytest.fixture
async def pool() -> AsyncIterator[LangServers]:
    config = LspConfig(detect=False, servers={"basedpyright": LangServerConfig(
        command=basedpyright(), timeout_s=60, startup_timeout_s=60)})
    servers = LangServers(config, SandboxSettings(), secret_env="OPENAI_API_KEY")
    yield servers
    await servers.aclose()


async def _call(ws: Workspace, pool: LangServers | None, name: str, **args: Any
                ) -> dict[str, Any]:
    box = ToolBox(ToolContext(ws, code_intel=pool))
    outcome = await box.call(name, json.dumps(args))
    return json.loads(outcome.text)


async def test_diagnostics_of_the_changed_files_mark_what_is_new(
        ws: Workspace, pool: LangServers) -> None:
    ws.stage_write(ws.resolve("app.py"), "from lib import greet\n\nn: int = greet('x')\n")
    result = await _call(ws, pool, "diagnostics")
    assert result["ok"] and result["summary"] == "1 file checked: 1 error (1 new)"
    [line] = result["problems"]
    assert line.startswith("app.py:3:10 error (new): Type \"str\" is not assignable")
    assert line.endswith("[reportAssignmentType basedpyright] | n: int = greet('x')")


async def test_definition_references_symbols_and_hover_answer_in_path_line_text(
        ws: Workspace, pool: LangServers) -> None:
    definition = await _call(ws, pool, "definition", path="app.py", line=3, symbol="greet")
    assert definition["definitions"] == ["lib.py:1:5: def greet(name: str) -> str:"]
    refs = await _call(ws, pool, "references", path="lib.py", line=1, symbol="greet")
    assert refs["count"] == 3 and "app.py:3:7: print(greet('x'))" in refs["references"]
    symbols = await _call(ws, pool, "workspace_symbols", query="greet")
    assert "function greet  lib.py:1:5: def greet(name: str) -> str:" in symbols["symbols"]
    hover = await _call(ws, pool, "hover", path="app.py", line=3, symbol="greet")
    assert "def greet(name: str) -> str" in hover["hover"]


async def test_a_name_not_on_the_line_is_told_with_the_line(
        ws: Workspace, pool: LangServers) -> None:
    result = await _call(ws, pool, "definition", path="app.py", line=3, symbol="shout")
    assert result["ok"] is False and result["error"] == "NOT_FOUND"
    assert "'shout' is not on line 3 of app.py; that line reads: \"print(greet('x'))\"" in \
        result["message"]


async def test_the_fence_holds_for_these_tools_too(ws: Workspace, pool: LangServers) -> None:
    result = await _call(ws, pool, "hover", path=".env", line=1)
    assert result["ok"] is False and result["error"] != "TOOL_FAILED"
    result = await _call(ws, pool, "diagnostics", paths=["../outside.py"])
    assert result["ok"] is False


async def test_without_a_server_the_tools_are_not_offered(ws: Workspace) -> None:
    box = ToolBox(ToolContext(ws))
    assert not {"diagnostics", "definition", "references", "workspace_symbols",
                "hover"} & set(box.names())
    result = await _call(ws, None, "references", path="lib.py", line=1)
    assert result["error"] == "UNKNOWN_TOOL"
