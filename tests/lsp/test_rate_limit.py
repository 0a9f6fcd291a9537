"""The per-client cap on chat requests per minute: beyond it requests wait their turn; when
the session's queue is full, the request fails saying when to retry."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import CLIENTS, AgentClient, initialize, options_for


@pytest.mark.parametrize("editor", CLIENTS)
async def test_requests_beyond_the_rate_wait_and_a_full_queue_refuses(
        bare_client: AgentClient, model: ReplayServer, project: Path, editor: str) -> None:
    options = options_for(model, chat_requests_per_minute=1, chat_queue_limit=1)
    await initialize(bare_client, client_capabilities(editor), project, options)
    model.load({"steps": [{"reply": {"text": "ok"}, "times": "*"}]})
    first = await bare_client.chat("one")
    session = {"sessionId": first["sessionId"]}

    second = bare_client.send("agentls/chat", {"prompt": "two", **session})
    limited = await bare_client.wait_for_event(lambda e: "retryAfter" in e)
    assert 0 < limited["retryAfter"] <= 60
    assert "chat_requests_per_minute" in limited["message"]
    third = bare_client.send("agentls/chat", {"prompt": "three", **session})
    queued = await bare_client.wait_for_event(lambda e: e.get("waiting") == 1)

    with pytest.raises(JsonRpcException) as refused:
        await bare_client.send("agentls/chat", {"prompt": "four", **session})

    assert refused.value.code == -32803
    assert "retry in about" in refused.value.message
    assert "chat_queue_limit" in refused.value.message
    assert len(model.requests) == 1  # neither waiting request reached the model
    for run_id, pending in ((limited["runId"], second), (queued["runId"], third)):
        assert await bare_client.send("agentls/cancel", {"runId": run_id}) == {"cancelled": True}
        assert (await pending)["stopReason"] == "cancelled"
