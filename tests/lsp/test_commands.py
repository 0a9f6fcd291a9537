"""workspace/executeCommand: agentls.chat, agentls.newSession, agentls.cancel."""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import AgentClient


async def execute(client: AgentClient, command: str, *arguments: Any) -> Any:
    return await client.send("workspace/executeCommand", lsp.ExecuteCommandParams(
        command=command, arguments=list(arguments)))


async def test_chat_command_answers_at_once_and_the_turn_runs_on_the_session(
        client: AgentClient, model: ReplayServer) -> None:
    model.load({"steps": [{"reply": {"text": "From the palette."}}]})
    created = await execute(client, "agentls.newSession", {"title": "palette"})

    result = await execute(client, "agentls.chat",
                           {"prompt": "hello", "sessionId": created["sessionId"]})

    assert result["started"] is True and result["sessionId"] == created["sessionId"]
    done = await client.wait_for_event(
        lambda e: e["kind"] == "done" and e["runId"] == result["runId"])
    assert done["text"] == "From the palette." and done["stopReason"] == "done"
    assert done["sessionId"] == created["sessionId"]
    listing = await client.send("agentls/sessions", None)
    titles = {s["id"]: s["title"] for s in listing["sessions"]}
    assert titles[created["sessionId"]] == "palette"


async def test_cancel_command_of_an_unknown_run(client: AgentClient) -> None:
    assert await execute(client, "agentls.cancel", {"runId": "nope"}) == {"cancelled": False}


async def test_bad_arguments_are_an_invalid_params_error(client: AgentClient) -> None:
    with pytest.raises(JsonRpcException) as error:
        await execute(client, "agentls.chat", {"prompt": ""})
    assert error.value.code == -32602
    assert "prompt" in error.value.message
    with pytest.raises(JsonRpcException) as unknown:
        await client.chat("hi", sessionId="01NOSUCHSESSION")
    assert unknown.value.code == -32602 and "does not exist" in unknown.value.message
