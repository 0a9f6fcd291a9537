"""An LSP editor without AgentLS's plugin, behaving like Emacs + eglot (its recorded
capabilities: no code action resolve, so actions run as the agentls.runAction command; a
chat is the agentls.chat command):
eglot applies a workspace/applyEdit at once and answers ``applied: true``, but sends the
document's didChange only from an idle timer, which cannot fire while it waits for its own
command request. The real server and the scripted model (not a real model)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import (
    AgentClient,
    apply_to_open_documents,
    call,
    initialize,
    last_user_message,
    open_document,
    options_for,
)
from tests.lsp.test_code_actions import (
    FIX_CALL,
    FIXED,
    WRONG_OPERATOR,
    execute,
    list_actions,
    open_calc,
    rng,
)

EGLOT_TIMEOUT_S = 10.0  # jsonrpc-request's default timeout in eglot


async def eglot_runs_the_fix(client: AgentClient, project: Path, uri: str) -> dict[str, Any]:
    """What eglot does with the action: the command (10 s timeout), then, once the command
    has returned, the edit it applied reaches the server with its idle timer's didChange."""
    (fix, *_) = await list_actions(client, uri, rng(1, 12, 1, 12), [WRONG_OPERATOR])
    assert fix.command is not None and fix.command.command == "agentls.runAction"
    return await eglot_executes(client, fix.command)


async def eglot_executes(client: AgentClient, command: lsp.Command) -> dict[str, Any]:
    """eglot's command request (10 s timeout) answers at once with the run started; the run's
    workspace/applyEdit comes later, and the edit's didChange after eglot's idle timer."""
    started = time.monotonic()
    result: dict[str, Any] = await asyncio.wait_for(execute(client, command), EGLOT_TIMEOUT_S)
    assert time.monotonic() - started < 1.0, "the command held the client's request"
    assert result["started"] is True and result["runId"]
    for _ in range(600):
        if client.edits:
            break
        await asyncio.sleep(0.05)
    assert client.edits, ([m.message for m in client.messages],
                          [e for e in client.chat_events if e["kind"] in ("error", "done")])
    (params,) = client.edits
    await asyncio.sleep(0.5)  # eglot-send-changes-idle-time
    client.apply_to_documents = True
    apply_to_open_documents(client, params.edit)
    return result


async def recorded(client: AgentClient, run_id: str) -> dict[str, Any]:
    done = await client.wait_for_event(lambda e: e["kind"] == "done" and e["runId"] == run_id)
    for _ in range(200):
        history = await client.send("agentls/history", {"sessionId": done["sessionId"]})
        records = [m["metadata"] for m in history["messages"]
                   if (m.get("metadata") or {}).get("applied") is not None]
        if records:
            return dict(records[-1])
        await asyncio.sleep(0.05)
    raise AssertionError("the edit's outcome was never recorded")


async def test_eglot_applies_and_is_not_told_not_applied(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    await initialize(bare_client, client_capabilities("emacs"), project, options_for(model))
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [FIX_CALL]}},
        {"match": {"tool_results": True}, "reply": {"text": "add() now adds."}},
    ]})
    bare_client.apply_to_documents = False  # applied in the buffer; didChange comes later
    uri = open_calc(bare_client, project, version=1)

    result = await eglot_runs_the_fix(bare_client, project, uri)
    await asyncio.sleep(1.0)  # time for a wrong "not applied" to be asked, if it were

    assert bare_client.open_texts[uri][1] == FIXED
    assert not [p for p in bare_client.prompts if "not applied" in p.message], [
        p.message for p in bare_client.prompts]
    assert (await recorded(bare_client, result["runId"]))["applied"] is True


async def test_a_run_longer_than_the_clients_request_timeout(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    """eglot gives up on a request after 10 s; a 15 s run must not be one."""
    await initialize(bare_client, client_capabilities("emacs"), project, options_for(model))
    model.load({"steps": [
        {"match": {"tool_results": False},
         "reply": {"first_delay_s": 15.0, "tool_calls": [FIX_CALL]}},
        {"match": {"tool_results": True}, "reply": {"text": "add() now adds."}},
    ]})
    bare_client.apply_to_documents = False
    uri = open_calc(bare_client, project, version=1)
    started = time.monotonic()

    result = await eglot_runs_the_fix(bare_client, project, uri)

    assert time.monotonic() - started > EGLOT_TIMEOUT_S  # the run really was longer
    assert bare_client.open_texts[uri][1] == FIXED
    assert (await recorded(bare_client, result["runId"]))["applied"] is True


async def test_a_late_didchange_that_does_not_hold_the_edit_is_reported(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    await initialize(bare_client, client_capabilities("emacs"), project, options_for(model))
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [FIX_CALL]}},
        {"match": {"tool_results": True}, "reply": {"text": "add() now adds."}},
    ]})
    bare_client.apply_to_documents = False
    uri = open_calc(bare_client, project, version=1)
    (fix, *_) = await list_actions(bare_client, uri, rng(1, 12, 1, 12), [WRONG_OPERATOR])
    await asyncio.wait_for(execute(bare_client, fix.command), EGLOT_TIMEOUT_S)
    for _ in range(600):
        if bare_client.edits:
            break
        await asyncio.sleep(0.05)

    await asyncio.sleep(2.5)  # the answer was trusted (no didChange yet) and recorded
    # The editor said applied, then its buffer turns out to hold something else.
    version, text = bare_client.open_texts[uri]
    bare_client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text="# other\n" + text)]))

    def shown() -> list[str]:
        return [m.message for m in bare_client.messages]

    for _ in range(100):
        if any("does not hold the change" in m for m in shown()):
            break
        await asyncio.sleep(0.05)
    assert any("src/calc.py does not hold the change" in m for m in shown()), shown()
    # The record is corrected: what calc.py holds is neither the edit nor the old text.
    record = await recorded_when(bare_client, lambda r: r["applied"] is False)
    assert "the editor answered applied, but src/calc.py edited during the review" in (
        record["failure_reason"]), record


async def recorded_when(client: AgentClient, fits: Any) -> dict[str, Any]:
    """The newest edit record of the newest session, once ``fits(record)``."""
    for _ in range(200):
        sessions = (await client.send("agentls/sessions", {"limit": 1}))["sessions"]
        history = await client.send("agentls/history", {"sessionId": sessions[0]["id"]})
        records = [dict(m["metadata"]) for m in history["messages"]
                   if (m.get("metadata") or {}).get("applied") is not None]
        if records and fits(records[-1]):
            return records[-1]
        await asyncio.sleep(0.05)
    raise AssertionError("the record never fitted")


async def chat_command(client: AgentClient, params: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await execute(
        client, lsp.Command("Chat", "agentls.chat", arguments=[params]))
    return result


async def eglot_chats(client: AgentClient, uri: str) -> dict[str, Any]:
    """What eglot does with ``M-x eglot-execute-command agentls.chat``: the command (10 s
    timeout), then, once it has returned, the applied edit's didChange from its idle timer."""
    return await eglot_executes(client, lsp.Command("Chat", "agentls.chat", arguments=[
        {"prompt": "add() subtracts; fix it", "context": {"uri": uri}}]))


async def closing_message(client: AgentClient) -> str:
    for _ in range(200):
        ended = [m.message for m in client.messages if m.message.startswith("AgentLS: ")
                 and "Edit " in m.message]
        if ended:
            return ended[-1]
        await asyncio.sleep(0.05)
    raise AssertionError([m.message for m in client.messages])


async def test_the_chat_command_answers_at_once_and_a_15_s_run_lands(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    """agentls.chat as a plain client sends it: answered with the run id in < 1 s though the
    run takes 15 s (eglot gives up after 10 s); the edit lands, is recorded applied, and the
    run's end is told with window/showMessage (eglot shows no agentls/chatEvent)."""
    await initialize(bare_client, client_capabilities("emacs"), project, options_for(model))
    model.load({"steps": [
        {"match": {"tool_results": False},
         "reply": {"first_delay_s": 15.0, "tool_calls": [FIX_CALL]}},
        {"match": {"tool_results": True}, "reply": {"text": "add() now adds."}},
    ]})
    bare_client.apply_to_documents = False  # applied in the buffer; didChange comes later
    uri = open_calc(bare_client, project, version=1)
    started = time.monotonic()

    result = await eglot_chats(bare_client, uri)

    assert time.monotonic() - started > EGLOT_TIMEOUT_S  # the run really was longer
    assert bare_client.open_texts[uri][1] == FIXED
    assert (await recorded(bare_client, result["runId"]))["applied"] is True
    done = await bare_client.wait_for_event(
        lambda e: e["kind"] == "done" and e["runId"] == result["runId"])
    assert done["applied"] is True
    # Named in the answer unless the command came in the server's first second (as here).
    assert result.get("sessionId") in (None, done["sessionId"])
    message = await closing_message(bare_client)
    assert "add() now adds." in message and "Edit applied: src/calc.py." in message, message
    assert not [p for p in bare_client.prompts if "not applied" in p.message], [
        p.message for p in bare_client.prompts]


async def test_the_chat_command_continues_a_session_and_refuses_an_unknown_one(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    await initialize(bare_client, client_capabilities("emacs"), project, options_for(model))
    model.load({"steps": [{"match": {"user": "again"}, "reply": {"text": "Again."}},
                          {"times": 2, "reply": {"text": "Hello."}}]})
    first = await chat_command(bare_client, {"prompt": "hi"})
    session = (await bare_client.wait_for_event(
        lambda e: e["kind"] == "done" and e["runId"] == first["runId"]))["sessionId"]

    second = await chat_command(bare_client, {"prompt": "again", "sessionId": session})
    third = await chat_command(bare_client, {"prompt": "a new one"})

    assert second["sessionId"] == session and second["runId"] != first["runId"]
    done = await bare_client.wait_for_event(
        lambda e: e["kind"] == "done" and e["runId"] == second["runId"])
    assert done["text"] == "Again." and done["sessionId"] == session
    # The engine is loaded: a new session is created before the answer, which names it.
    assert third["sessionId"] != session
    done = await bare_client.wait_for_event(
        lambda e: e["kind"] == "done" and e["runId"] == third["runId"])
    assert done["sessionId"] == third["sessionId"]
    with pytest.raises(JsonRpcException) as unknown:
        await chat_command(bare_client, {"prompt": "hi", "sessionId": "01NOSUCHSESSION"})
    assert unknown.value.code == -32602 and "does not exist" in unknown.value.message


OPS = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n"
OPS_FIRST_ONLY = OPS.replace("a - b", "a + b")
OPS_CALL = call("edit_file", "o1", path="src/ops.py", edits=[
    {"search": "    return a - b", "replace": "    return a + b"},
    {"search": "def mul(a, b):\n    return a + b", "replace": "def mul(a, b):\n    return a * b"}])


async def test_a_late_didchange_with_part_of_the_edit_corrects_the_record(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    """The editor answered applied: true and later its document holds only the first of the
    two hunks: the session's record says which was kept, and the model's next request too."""
    await initialize(bare_client, client_capabilities("emacs"), project, options_for(model))
    model.load({"steps": [
        {"match": {"user": "fix ops", "tool_results": False}, "reply": {"tool_calls": [OPS_CALL]}},
        {"match": {"user": "fix ops", "tool_results": True}, "reply": {"text": "Fixed both."}},
        {"match": {"user": "what now"}, "reply": {"text": "I see."}},
    ]})
    bare_client.apply_to_documents = False
    (project / "src" / "ops.py").write_text(OPS)
    uri = open_document(bare_client, project / "src" / "ops.py", OPS)
    started = await chat_command(bare_client, {"prompt": "fix ops", "context": {"uri": uri}})
    for _ in range(600):
        if bare_client.edits:
            break
        await asyncio.sleep(0.05)
    assert bare_client.edits
    await recorded_when(bare_client, lambda r: r["applied"] is True)  # trusted, for now

    bare_client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=OPS_FIRST_ONLY)]))

    record = await recorded_when(bare_client, lambda r: r["applied"] is False)
    assert record["failure_reason"] == (
        "the editor answered applied, but kept 1 of 2 changes in src/ops.py"), record
    assert record["review"] == [{"path": str(project / "src" / "ops.py"), "kind": "update",
                                 "state": "partial", "hunks": 2, "kept": [1]}], record
    session = (await bare_client.wait_for_event(
        lambda e: e["kind"] == "done" and e["runId"] == started["runId"]))["sessionId"]
    follow = await chat_command(bare_client, {"prompt": "what now", "sessionId": session})
    await bare_client.wait_for_event(
        lambda e: e["kind"] == "done" and e["runId"] == follow["runId"])
    told = last_user_message(model.requests[-1].body)
    assert "the editor said your last changes were applied, but kept 1 of 2 changes" in told
    assert "the person kept 1 of your 2 changes to src/ops.py (changes 1)" in told, told
