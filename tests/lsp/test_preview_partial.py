"""An edit partly kept in the editor's own preview (issue 38, item 3): VS Code's refactor
preview with one file unticked answers ``applied: true`` and sends a didChange for the kept
file only. A raw LSP client (pytest-lsp) does exactly that: the session's record, the message
shown and the model's next request say which file was not kept. The real server and the
scripted model (not a real model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import (
    AgentClient,
    call,
    initialize,
    last_user_message,
    open_document,
    options_for,
)

CALC = "def add(a, b):\n    return a - b\n"
OTHER = "def sub(a, b):\n    return a + b\n"
BOTH = [
    call("edit_file", "e1", path="src/calc.py",
         edits=[{"search": "return a - b", "replace": "return a + b"}]),
    call("edit_file", "e2", path="src/other.py",
         edits=[{"search": "return a + b", "replace": "return a - b"}]),
]


async def actions_record(client: AgentClient, session_id: str) -> dict[str, Any]:
    answer = await client.send("agentls/history", {"sessionId": session_id})
    actions = [m for m in answer["messages"] if m["kind"] == "actions"]
    return dict(actions[-1]["metadata"])


async def test_one_file_of_two_unticked_in_the_preview_is_recorded_shown_and_told(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    await initialize(bare_client, client_capabilities("visual-studio-code"), project,
                     options_for(model))
    model.load({"steps": [
        {"match": {"user": "fix both", "tool_results": False}, "reply": {"tool_calls": BOTH}},
        {"match": {"user": "fix both", "tool_results": True}, "reply": {"text": "Fixed both."}},
        {"match": {"user": "what now"}, "reply": {"text": "I see."}},
    ]})
    calc, other = project / "src" / "calc.py", project / "src" / "other.py"
    calc.write_text(CALC)
    other.write_text(OTHER)
    calc_uri = open_document(bare_client, calc, CALC)
    other_uri = open_document(bare_client, other, OTHER)
    bare_client.apply_only = {calc_uri}  # other.py unticked; the answer is still applied

    first = await bare_client.chat("fix both")

    assert len(bare_client.edits) == 1 and bare_client.open_texts[other_uri] == (1, OTHER)
    assert bare_client.open_texts[calc_uri][1].endswith("return a + b\n")
    assert first["applied"] is False  # not everything: the chat's answer says so
    record = await actions_record(bare_client, first["sessionId"])
    assert record["applied"] is False
    assert record["review"] == [
        {"path": str(calc), "kind": "update", "state": "kept"},
        {"path": str(other), "kind": "update", "state": "rejected"}], record
    assert "src/other.py did not change" in record["failure_reason"]
    shown = [m.message for m in bare_client.messages]
    assert any("src/other.py did not change" in m and "not kept" in m for m in shown), shown
    statuses = [e["message"] for e in bare_client.events(first["runId"], "status")]
    assert "review: kept src/calc.py; rejected src/other.py" in statuses, statuses

    second = await bare_client.chat("what now?", sessionId=first["sessionId"])
    assert second["text"] == "I see."
    told = last_user_message(model.requests[-1].body)
    assert "the person kept your change to src/calc.py" in told, told
    assert "the person rejected your change to src/other.py" in told, told


async def test_both_files_applied_stays_applied(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    await initialize(bare_client, client_capabilities("visual-studio-code"), project,
                     options_for(model))
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": BOTH}},
        {"match": {"tool_results": True}, "reply": {"text": "Fixed both."}},
    ]})
    for path, text in ((project / "src" / "calc.py", CALC), (project / "src" / "other.py", OTHER)):
        path.write_text(text)
        open_document(bare_client, path, text)
    result = await bare_client.chat("fix both")
    assert result["applied"] is True
    assert (await actions_record(bare_client, result["sessionId"]))["applied"] is True
    assert not [m.message for m in bare_client.messages if "not kept" in m.message]


async def test_a_tool_call_written_as_text_is_run_and_an_unreadable_one_is_a_message(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    """Issue 38, item 1, in an editor: a call a server left in the text is run (the edit
    arrives), and one that cannot be read ends the turn with the reason and what to do."""
    model.load({"steps": [
        {"match": {"user": "fix calc", "tool_results": False},
         "reply": {"text": "Fixing.", "tool_calls": BOTH[:1], "text_tool_calls": "hermes"}},
        {"match": {"user": "fix calc", "tool_results": True}, "reply": {"text": "Fixed."}},
        {"match": {"user": "again"}, "reply": {
            "tool_calls": [call("edit_everything", "x1", path="src/calc.py")],
            "text_tool_calls": "mistral"}},
    ]})
    (project / "src" / "calc.py").write_text(CALC)
    read = await client.chat("fix calc")
    assert read["stopReason"] == "done" and read["applied"] is True and client.edits
    warnings = [e["message"] for e in client.events(read["runId"], "status")
                if e.get("warning")]
    assert any("did not parse the model's tool calls" in w for w in warnings), warnings

    unread = await client.chat("again", sessionId=read["sessionId"])
    assert unread["stopReason"] == "error"
    assert unread["error"]["kind"] == "tool_calls_unread"
    assert "'edit_everything'" in unread["error"]["message"]
    assert 'tool_calls = "text"' in unread["error"]["hint"]
    (event,) = client.events(unread["runId"], "error")
    assert event["errorKind"] == "tool_calls_unread" and "--jinja" in event["hint"]
