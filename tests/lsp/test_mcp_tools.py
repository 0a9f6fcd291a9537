"""An MCP server's tool in the editor: configured in the editor's settings, offered to the
scripted model, shown in the chat events, approved through window/showMessageRequest like a
shell command."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentls.devtools.replay.command import ReplayServer
from agentls.sandbox.bwrap import probe
from tests.lsp.conftest import AgentClient, call, tool_result_text

pytestmark = pytest.mark.skipif(not probe().available, reason="no sandbox here")

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")


@pytest.fixture
def mcp_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLS_MCP__SERVERS__TIME__COMMAND", TIME_SERVER)


@pytest.mark.parametrize("answer", ["Allow once", "Deny"])
async def test_the_person_approves_an_mcp_tool_and_sees_which_ran(
        mcp_settings: None, client: AgentClient, model: ReplayServer, answer: str) -> None:
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("mcp__time__get_current_time", "t1", timezone="Asia/Tokyo")]}},
        {"match": {"tool": "mcp__time__get_current_time"}, "reply": {"text": "Done."}},
    ]})
    client.answer = lambda params: answer

    result = await client.chat("what time is it in Tokyo?")

    assert result["stopReason"] == "done"
    [prompt] = client.prompts
    # The server, the tool and its arguments (the quotes around the tool are the prompt's).
    assert "get_current_time" in prompt.message.splitlines()[0]
    assert "of MCP server time (timezone='Asia/Tokyo')?" in prompt.message
    assert "(mcp.servers.time.permission or .tools)" in prompt.message
    started = client.events(result["runId"], "toolCall")
    assert started[0]["name"] == "mcp__time__get_current_time"
    assert json.loads(started[0]["arguments"]) == {"timezone": "Asia/Tokyo"}
    got = json.loads(tool_result_text(model.requests[-1].body, "t1"))
    if answer == "Allow once":
        assert got["ok"] is True and "Asia/Tokyo" in got["content"]
    else:
        assert got["error"] == "USER_REJECTED"
