"""Cancelling a chat mid-stream, three ways: ``$/cancelRequest`` of the request, the
progress token's cancel, and ``agentls/cancel {runId}``. Each stops the run before the model
has finished streaming, sends no edit, and leaves the session usable."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcRequestCancelled

from agentls.devtools.replay.command import ReplayServer
from agentls.engine.loop.tool_dispatch import PROPOSED_CLAIM
from tests.lsp.conftest import AgentClient, Event, call, last_user_message

LONG_TEXT = "".join(f"word{i} " for i in range(600))  # about 30 s at the pace below


def script() -> dict[str, Any]:
    """A file is written into the ChangeSet, then the model streams slowly."""
    return {"steps": [
        {"match": {"user": "long", "tool_results": False}, "reply": {"tool_calls": [
            call("write_file", "w1", path="src/new.py", content="x = 1\n")]}},
        {"match": {"tool": "write_file"},
         "reply": {"text": LONG_TEXT, "chunk_size": 5, "delay_s": 0.05}},
        {"match": {"user": "after"}, "reply": {"text": "Still here."}},
    ]}


def is_text(event: Event) -> bool:
    return event["kind"] == "text"


async def assert_stopped_early(client: AgentClient, model: ReplayServer, run_id: str,
                               project: Path) -> None:
    done = await client.wait_for_event(lambda e: e["runId"] == run_id and e["kind"] == "done")
    assert done["stopReason"] == "cancelled" and done["applied"] is None
    streamed = "".join(e["text"] for e in client.events(run_id, "text"))
    # After the write it proposed, the model's words are a claim: "proposed: …".
    words = streamed.removeprefix(PROPOSED_CLAIM)
    assert words != streamed and LONG_TEXT.startswith(words) and len(words) < len(LONG_TEXT)
    assert client.edits == [] and not (project / "src" / "new.py").exists()
    # The history keeps the answer as far as it came, in a turn marked cancelled.
    page = await client.send("agentls/turns", {"sessionId": done["sessionId"]})
    cut = page["turns"][-1]
    assert cut["outcome"] == "cancelled"
    assert [s["text"] for s in cut["steps"] if s["kind"] == "text"] == [streamed]
    after = await client.chat("after that", sessionId=done["sessionId"])  # the session is free
    assert after["text"] == "Still here."
    sent = model.requests[-1].body["messages"]
    closed = [m for m in sent if m["role"] == "tool" and m.get("tool_call_id") == "w1"]
    assert len(closed) == 1  # the history the model sees next is consistent
    # new.py was written into the dropped ChangeSet: the model must not think it exists.
    assert "cancelled the run before they were shown" in last_user_message(
        model.requests[-1].body)


async def test_cancel_request_stops_the_run(client: AgentClient, model: ReplayServer,
                                            project: Path) -> None:
    model.load(script())
    pending = client.send("agentls/chat", {"prompt": "long answer please"}, msg_id="chat-1")
    first = await client.wait_for_event(is_text)

    client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="chat-1"))

    with pytest.raises(JsonRpcRequestCancelled):
        await pending
    await assert_stopped_early(client, model, first["runId"], project)


async def test_agentls_cancel_stops_the_run(client: AgentClient, model: ReplayServer,
                                            project: Path) -> None:
    model.load(script())
    pending = client.send("agentls/chat", {"prompt": "long answer please"})
    first = await client.wait_for_event(is_text)

    answer = await client.send("agentls/cancel", {"runId": first["runId"]})

    assert answer == {"cancelled": True}
    result = await pending
    assert result["stopReason"] == "cancelled" and result["changes"] == []
    assert result["applied"] is None
    await assert_stopped_early(client, model, first["runId"], project)
    again = await client.send("agentls/cancel", {"runId": first["runId"]})
    assert again == {"cancelled": False}


async def test_progress_cancel_stops_the_run(client: AgentClient, model: ReplayServer,
                                             project: Path) -> None:
    model.load(script())
    token = "chat-progress-1"
    client.progress_reports[token] = []  # a client-created token
    pending = client.send("agentls/chat", {"prompt": "long answer please",
                                           "workDoneToken": token})
    first = await client.wait_for_event(is_text)

    client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))

    result = await pending
    assert result["stopReason"] == "cancelled"
    await assert_stopped_early(client, model, first["runId"], project)
    reports = client.progress_reports[token]
    assert isinstance(reports[0], lsp.WorkDoneProgressBegin) and reports[0].cancellable
    assert isinstance(reports[-1], lsp.WorkDoneProgressEnd)


async def test_an_edit_answered_after_its_chat_was_cancelled_is_dropped(
        client: AgentClient, model: ReplayServer, project: Path) -> None:
    """The chat request is cancelled while its edit waits in the refactor preview; the
    editor's answer to workspace/applyEdit comes after it. The delivery waits for that
    answer whatever happens to the request, and the server goes on answering."""
    model.load({"steps": [
        {"match": {"user": "write", "tool_results": False}, "reply": {"tool_calls": [
            call("write_file", "w1", path="src/new.py", content="x = 1\n")]}},
        {"match": {"tool": "write_file"}, "reply": {"text": "Written."}},
        {"match": {"user": "after"}, "reply": {"text": "Still here."}},
    ]})
    client.apply_gate = asyncio.Event()
    pending = client.send("agentls/chat", {"prompt": "write new.py"}, msg_id="chat-2")
    for _ in range(600):  # the edit is in the preview
        if client.edits:
            break
        await asyncio.sleep(0.05)
    assert client.edits

    client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="chat-2"))
    with pytest.raises(JsonRpcRequestCancelled):
        await pending
    client.apply_gate.set()  # the late answer
    await asyncio.sleep(0.3)

    after = await client.chat("after that")
    assert after["text"] == "Still here."
