"""agentls/chat end to end: the real server, the scripted model, VS Code's and Neovim's
recorded capabilities."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import (
    CLIENTS,
    AgentClient,
    apply_text_edits,
    call,
    initialize,
    last_user_message,
    open_document,
    options_for,
    tool_result_text,
)

FIX_ADD = [
    call("edit_file", "e1", path="src/calc.py",
         edits=[{"search": "return a - b", "replace": "return a + b"}]),
    call("apply_patch", "e2", patch="*** Begin Patch\n*** Update File: src/main.py\n@@\n"
         "-print(add(1, 2))\n+print(add(2, 2))\n*** End Patch\n"),
    call("write_file", "e3", path="src/util.py", content="def double(x):\n    return 2 * x\n"),
]


def text_edits(edit: lsp.WorkspaceEdit) -> dict[str, lsp.TextDocumentEdit]:
    return {c.text_document.uri: c for c in edit.document_changes or ()
            if isinstance(c, lsp.TextDocumentEdit)}


async def history(client: AgentClient, session_id: str) -> list[dict[str, Any]]:
    answer = await client.send("agentls/history", {"sessionId": session_id})
    messages: list[dict[str, Any]] = answer["messages"]
    return messages


async def test_edits_to_two_files_and_a_new_one_arrive_as_one_workspace_edit(
        client: AgentClient, model: ReplayServer, project: Path) -> None:
    model.load({"steps": [
        {"match": {"user": "fix add", "tool_results": False}, "reply": {"tool_calls": FIX_ADD}},
        {"match": {"tool_results": True}, "reply": {"text": "Fixed add; added double."}},
    ]})
    result = await client.chat("please fix add")

    assert result["stopReason"] == "done" and result["applied"] is True
    assert result["text"] == "Fixed add; added double."
    calc, main, util = (project / "src" / n for n in ("calc.py", "main.py", "util.py"))
    assert {(c["uri"], c["kind"]) for c in result["changes"]} == {
        (calc.as_uri(), "update"), (main.as_uri(), "update"), (util.as_uri(), "create")}
    assert len(client.edits) == 1
    params = client.edits[0]
    assert params.label == "AgentLS: 3 files changed"
    edit = params.edit
    creates = [c for c in edit.document_changes or () if isinstance(c, lsp.CreateFile)]
    assert [c.uri for c in creates] == [util.as_uri()]
    edits = text_edits(edit)
    assert set(edits) == {calc.as_uri(), main.as_uri(), util.as_uri()}
    assert apply_text_edits(calc.read_text(), edits[calc.as_uri()].edits).endswith("a + b\n")
    assert apply_text_edits(main.read_text(), edits[main.as_uri()].edits).endswith(
        "print(add(2, 2))\n")
    assert apply_text_edits("", edits[util.as_uri()].edits) == "def double(x):\n    return 2 * x\n"
    all_text_edits = [e for d in edits.values() for e in d.edits]
    if client.editor == "visual-studio-code":  # type: ignore[attr-defined]
        annotations = edit.change_annotations or {}
        assert len(annotations) == 3
        assert all(a.needs_confirmation for a in annotations.values())
        assert all(isinstance(e, lsp.AnnotatedTextEdit) and e.annotation_id in annotations
                   for e in all_text_edits)
        assert creates[0].annotation_id in annotations
    else:  # Neovim declares no change annotation support
        assert not edit.change_annotations
        assert not any(isinstance(e, lsp.AnnotatedTextEdit) for e in all_text_edits)
        assert creates[0].annotation_id is None
    assert calc.read_text().endswith("a - b\n") and not util.exists()  # the editor writes

    events = client.events(result["runId"])
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert {e["sessionId"] for e in events} == {result["sessionId"]}
    assert [e["kind"] for e in events][-3:] == ["edit", "status", "done"]
    assert events[-2]["message"] == "waiting for your review"  # while the edit was out
    assert events[-1]["applied"] is True and events[-1]["stopReason"] == "done"
    assert {f["path"] for f in events[-3]["files"]} == {"src/calc.py", "src/main.py",
                                                         "src/util.py"}
    actions = [m for m in await history(client, result["sessionId"]) if m["kind"] == "actions"]
    assert actions[-1]["metadata"]["applied"] is True


async def test_a_rejected_edit_is_told_to_the_model_on_the_next_turn(
        client: AgentClient, model: ReplayServer) -> None:
    model.load({"steps": [
        {"match": {"user": "fix add", "tool_results": False},
         "reply": {"tool_calls": FIX_ADD[:1]}},
        {"match": {"tool_results": True}, "reply": {"text": "Fixed."}},
        {"match": {"user": "why"}, "reply": {"text": "You rejected it."}},
    ]})
    client.apply_result = lsp.ApplyWorkspaceEditResult(applied=False)
    first = await client.chat("fix add")
    assert first["applied"] is False and len(client.edits) == 1

    second = await client.chat("why not?", sessionId=first["sessionId"])

    assert second["text"] == "You rejected it."
    told = last_user_message(model.requests[-1].body)
    assert "the person rejected your changes to src/calc.py" in told
    stored = await history(client, first["sessionId"])
    actions = [m for m in stored if m["kind"] == "actions"]
    assert actions[-1]["metadata"]["applied"] is False
    # The history carries the note as data, beside the person's words (engine/notes.py).
    asked = [m for m in stored if m["kind"] == "message" and m["role"] == "user"][-1]
    assert asked["content"] == "why not?"
    assert [n.split(";")[0] for n in asked["notes"]] == [
        "the person rejected your changes to src/calc.py"]


async def test_rejection_note_is_told_once(client: AgentClient, model: ReplayServer) -> None:
    model.load({"steps": [
        {"match": {"user": "fix add", "tool_results": False},
         "reply": {"tool_calls": FIX_ADD[:1]}},
        {"match": {"tool_results": True}, "reply": {"text": "Fixed."}},
        {"match": {"user": "/turn/"}, "times": 2, "reply": {"text": "ok"}},
    ]})
    client.apply_result = lsp.ApplyWorkspaceEditResult(applied=False, failure_reason="no")
    first = await client.chat("fix add")
    await client.chat("turn two", sessionId=first["sessionId"])
    await client.chat("turn three", sessionId=first["sessionId"])

    second, third = (last_user_message(r.body) for r in model.requests[-2:])
    assert "rejected your changes to src/calc.py (the editor said: no)" in second
    assert "rejected" not in third


async def test_the_model_reads_the_unsaved_buffer_and_edits_its_version(
        client: AgentClient, model: ReplayServer, project: Path) -> None:
    calc = project / "src" / "calc.py"
    buffer = "def add(a, b):\n    return a * b  # unsaved\n"
    uri = open_document(client, calc, buffer, version=7)
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("read_file", "r1", path="src/calc.py")]}},
        {"match": {"tool": "read_file"}, "reply": {"tool_calls": [
            call("edit_file", "e1", path="src/calc.py",
                 edits=[{"search": "a * b", "replace": "a + b"}])]}},
        {"match": {"tool": "edit_file"}, "reply": {"text": "Done."}},
    ]})
    result = await client.chat("fix the operator")

    assert "# unsaved" in tool_result_text(model.requests[1].body, "r1")
    assert result["applied"] is True
    document_edit = text_edits(client.edits[0].edit)[uri]
    assert document_edit.text_document.version == 7
    assert apply_text_edits(buffer, document_edit.edits) == (
        "def add(a, b):\n    return a + b  # unsaved\n")


async def test_edit_positions_use_the_negotiated_encoding(
        client: AgentClient, model: ReplayServer, project: Path) -> None:
    (project / "emoji.py").write_text("s = '😀'; x = 1\n")
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("edit_file", "e1", path="emoji.py",
                 edits=[{"search": "x = 1", "replace": "x = 2"}])]}},
        {"match": {"tool_results": True}, "reply": {"text": "Done."}},
    ]})
    await client.chat("bump x")

    edit = text_edits(client.edits[0].edit)[(project / "emoji.py").as_uri()].edits[0]
    # The edit replaces "1": "s = '😀'; x = " before it is 14 UTF-16 code units (the emoji
    # is a surrogate pair) and 16 UTF-8 bytes.
    expected = 14 if client.editor == "visual-studio-code" else 16  # type: ignore[attr-defined]
    assert edit.range.start.character == expected
    encoding = "utf-16" if expected == 14 else "utf-8"
    assert apply_text_edits("s = '😀'; x = 1\n", [edit], encoding) == "s = '😀'; x = 2\n"


async def test_a_document_changed_during_the_run_is_not_edited(
        client: AgentClient, model: ReplayServer, project: Path) -> None:
    calc = project / "src" / "calc.py"
    uri = open_document(client, calc, calc.read_text(), version=1)
    model.load({"steps": [
        {"match": {"user": "fix add", "tool_results": False},
         "reply": {"tool_calls": FIX_ADD[:1]}},
        {"match": {"tool": "edit_file"}, "reply": {"tool_calls": [
            call("ask_user", "q1", question="Also rename it?", options=["yes", "no"])]}},
        {"match": {"tool": "ask_user"}, "reply": {"text": "Done."}},
        {"match": {"user": "again"}, "reply": {"text": "Reading it again."}},
    ]})

    def person_types_meanwhile() -> None:
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(
                text="def add(a, b):\n    return b - a\n")]))

    client.before_answer = person_types_meanwhile
    client.answer = lambda params: "no"
    result = await client.chat("fix add")

    assert result["applied"] is False and client.edits == []
    assert "src/calc.py changed during the run" in result["failureReason"]
    warnings = [m for m in client.messages if "src/calc.py" in m.message]
    assert len(warnings) == 1 and warnings[0].type == lsp.MessageType.Warning
    errors = client.events(result["runId"], "error")
    assert errors and errors[0]["errorKind"] == "stale"

    await client.chat("again", sessionId=result["sessionId"])
    assert "the person edited src/calc.py while you worked" in last_user_message(
        model.requests[-1].body)


@pytest.mark.parametrize("editor", CLIENTS)
async def test_an_unreachable_backend_is_an_error_result_not_a_crash(
        bare_client: AgentClient, model: ReplayServer, project: Path, editor: str) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    options = options_for(model)
    options["backends"]["scripted"]["base_url"] = f"http://127.0.0.1:{port}/v1"
    await initialize(bare_client, client_capabilities(editor), project, options)

    result = await bare_client.chat("hello?")

    assert result["stopReason"] == "error"
    error = result["error"]
    assert error["kind"] == "connection"
    assert f"127.0.0.1:{port}" in error["hint"] and "base_url" in error["hint"]
    events = bare_client.events(result["runId"], "error")
    assert events and events[0]["errorKind"] == "connection"
    listing = await bare_client.send("agentls/sessions", {})  # still serving
    assert result["sessionId"] in [s["id"] for s in listing["sessions"]]


async def test_two_sessions_run_in_parallel(client: AgentClient, model: ReplayServer) -> None:
    model.load({"steps": [
        {"match": {"user": "slow task", "tool_results": False}, "reply": {"tool_calls": [
            call("ask_user", "q1", question="Proceed?", options=["yes", "no"])]}},
        {"match": {"tool": "ask_user"}, "reply": {"text": "A finished."}},
        {"match": {"user": "quick task"}, "reply": {"text": "B finished."}},
    ]})
    gate = asyncio.Event()

    async def answer_later(params: lsp.ShowMessageRequestParams) -> str:
        await gate.wait()
        return "yes"

    client.answer = answer_later
    slow = client.send("agentls/chat", {"prompt": "slow task"})
    await client.wait_for_event(lambda e: e["kind"] == "toolCall" and e["name"] == "ask_user")

    quick = await client.chat("quick task")  # finishes while the first session waits
    assert quick["text"] == "B finished." and not slow.done()
    gate.set()
    first = await slow

    assert first["text"] == "A finished."
    assert first["sessionId"] != quick["sessionId"]


async def test_a_burst_of_twenty_requests_on_one_session_is_answered_in_order(
        client: AgentClient, model: ReplayServer) -> None:
    model.load({"steps": [{"match": {"user": f"burst {i:02d}"},
                           "reply": {"text": f"answer {i:02d}"}} for i in range(20)]})
    created = await client.send("workspace/executeCommand",
                                lsp.ExecuteCommandParams(command="agentls.newSession"))
    session_id = created["sessionId"]

    pending = [client.send("agentls/chat", {"prompt": f"burst {i:02d}", "sessionId": session_id})
               for i in range(20)]
    results = await asyncio.gather(*pending)

    assert [r["text"] for r in results] == [f"answer {i:02d}" for i in range(20)]
    assert {r["sessionId"] for r in results} == {session_id}
    assert [last_user_message(r.body) for r in model.requests] == [
        f"burst {i:02d}" for i in range(20)]
    users = [m["content"] for m in await history(client, session_id) if m["role"] == "user"]
    assert users == [f"burst {i:02d}" for i in range(20)]
    waited = [e for e in client.chat_events if e["kind"] == "status" and "waiting" in e]
    assert waited  # later requests were told they wait their turn


async def test_sessions_and_history_list_what_the_cli_sees(
        client: AgentClient, model: ReplayServer, project: Path) -> None:
    from agentls.engine.sessions.store import SessionStore

    model.load({"steps": [{"reply": {"text": "Hi."}}]})
    result = await client.chat("hello there")

    listing = await client.send("agentls/sessions", {"limit": 5})
    assert listing["sessions"][0]["id"] == result["sessionId"]
    assert listing["sessions"][0]["title"] == "hello there"
    messages = await history(client, result["sessionId"])
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "hello there"), ("assistant", "Hi.")]
    with SessionStore.for_workspace(project) as store:  # the file the CLI opens
        assert store.get_session(result["sessionId"]) is not None


async def test_the_context_becomes_the_turns_attachments(
        client: AgentClient, model: ReplayServer, project: Path) -> None:
    calc = project / "src" / "calc.py"
    uri = open_document(client, calc, "def add(a, b):\n    return a - b  # buffer\n")
    model.load({"steps": [{"reply": {"text": "It subtracts."}}]})
    selection = {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 16}}
    diagnostic = {"range": selection, "message": "wrong operator", "severity": 2,
                  "source": "lint"}

    await client.chat("what is wrong?", context={
        "uri": uri, "range": selection, "files": [(project / "README.md").as_uri()],
        "diagnostics": [diagnostic]})

    prompt = last_user_message(model.requests[0].body)
    assert "## Selection: src/calc.py, line 2" in prompt
    assert "return a - b" in prompt  # read from the open buffer's range
    assert "## File: README.md" in prompt and "# calc" in prompt
    assert "warning src/calc.py:2:5: wrong operator (lint)" in prompt
    assert prompt.rstrip().endswith("what is wrong?")


async def test_status_goes_to_a_server_created_progress(
        client: AgentClient, model: ReplayServer) -> None:
    model.load({"steps": [{"reply": {"text": "Hi."}}]})
    await client.chat("hello")

    [(token, reports)] = list(client.progress_reports.items())
    assert str(token).startswith("agentls-")
    assert isinstance(reports[0], lsp.WorkDoneProgressBegin) and reports[0].cancellable
    assert isinstance(reports[-1], lsp.WorkDoneProgressEnd) and reports[-1].message == "done"


async def test_an_applied_answer_for_a_stale_document_is_not_believed(
        client: AgentClient, model: ReplayServer, project: Path) -> None:
    """Neovim skips an edit whose version is stale and still answers applied: the run,
    the model and the person hear that nothing landed, and a retry is offered."""
    calc = project / "src" / "calc.py"
    open_document(client, calc, calc.read_text(), version=3)
    model.load({"steps": [
        {"match": {"user": "fix add", "tool_results": False},
         "reply": {"tool_calls": FIX_ADD[:1]}},
        {"match": {"tool_results": True}, "reply": {"text": "Fixed."}},
        {"match": {"user": "again"}, "reply": {"text": "I will read it again."}},
    ]})
    client.apply_to_documents = False  # answers applied, changes nothing: a skipped edit
    client.moved_before_answer = True  # because the document had moved on (the person typed)
    client.answer = lambda params: "Dismiss"
    first = await client.chat("fix add")

    assert first["applied"] is False and "does not hold the change" in first["failureReason"]
    assert any("did not land" in p.message for p in client.prompts)
    assert (client.prompts[-1].actions or [])[0].title.startswith("Retry")
    second = await client.chat("again", sessionId=first["sessionId"])
    assert second["text"] == "I will read it again."
    told = last_user_message(model.requests[-1].body)
    assert "none of your changes from the last turn were applied" in told
    actions = [m for m in await history(client, first["sessionId"]) if m["kind"] == "actions"]
    assert actions[0]["metadata"]["applied"] is False


async def test_a_skipped_edit_can_be_retried_on_the_current_text(
        client: AgentClient, model: ReplayServer, project: Path) -> None:
    calc = project / "src" / "calc.py"
    uri = open_document(client, calc, calc.read_text(), version=3)
    model.load({"steps": [
        {"match": {"user": "fix add", "tool_results": False}, "times": 2,
         "reply": {"tool_calls": FIX_ADD[:1]}},
        {"match": {"tool_results": True}, "times": 2, "reply": {"text": "Fixed."}},
    ]})
    client.apply_to_documents = False
    client.moved_before_answer = True
    retried = asyncio.get_running_loop().create_future()

    def answer(params: lsp.ShowMessageRequestParams) -> str:
        client.apply_to_documents = True
        client.moved_before_answer = False
        retried.set_result(True)
        return (params.actions or [])[0].title

    client.answer = answer
    first = await client.chat("fix add")
    assert first["applied"] is False
    await asyncio.wait_for(retried, 30)
    done = await client.wait_for_event(
        lambda e: e["kind"] == "done" and e["runId"] != first["runId"])
    assert done["applied"] is True
    assert "a + b" in client.open_texts[uri][1]


async def test_a_refusal_is_said_and_is_the_stop_reason(client: AgentClient,
                                                         model: ReplayServer) -> None:
    model.load({"steps": [{"reply": {"refusal": "I can't help with that."}}]})
    result = await client.chat("something bad")
    assert result["stopReason"] == "refusal" and result["text"] == "I can't help with that."
    [done] = client.events(result["runId"], "done")
    assert done["stopReason"] == "refusal"
    assert any("refused" in e["message"] for e in client.events(result["runId"], "status"))
