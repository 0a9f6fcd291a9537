"""The conversation (issue 29) over real LSP: references resolved into attachments and chips,
a session's model and mode switched between turns, the display-ready history equal to what
was shown live, and mention completion. A real `agentls serve`, the scripted model."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from agentls.engine import model_choice as models
from tests.lsp.conftest import AgentClient, initialize, options_for


async def _start(client: AgentClient, model: ReplayServer, project: Path,
                 editor: str = "neovim") -> None:
    await initialize(client, client_capabilities(editor), project, options_for(model))


def _chat_requests(model: ReplayServer) -> list[Any]:
    return [r for r in model.requests if r.path.endswith("/chat/completions")]


def _live_turns(client: AgentClient, run_ids: list[str]) -> list[dict[str, Any]]:
    """What a client showed while each run streamed, rebuilt from its chat events only."""
    turns = []
    for run_id in run_ids:
        events = client.events(run_id)
        [start] = [e for e in events if e["kind"] == "turn"]
        # shown in the order the calls came, each completed by its result when it came
        calls = [e for e in events if e["kind"] == "toolCall"]
        results = {e["callId"]: e for e in events if e["kind"] == "toolResult"}
        turns.append({
            "text": start["prompt"], "attachments": start["attachments"],
            "notes": start["notes"],
            "model": start["model"], "mode": start["mode"],
            "answer": "".join(e["text"] for e in events if e["kind"] == "text"),
            "tools": [(c["name"], results[c["callId"]]["ok"], results[c["callId"]]["summary"])
                      for c in calls],
            "outcome": events[-1]["stopReason"],
        })
    return turns


def _answer(turn: dict[str, Any]) -> str:
    """A stored turn's text steps as they streamed: each step's text a paragraph."""
    return "\n\n".join(s["text"] for s in turn["steps"] if s["kind"] == "text")


def _calls(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in turn["steps"] if s["kind"] == "toolCall"]


def _history_turns(page: dict[str, Any]) -> list[dict[str, Any]]:
    return [{
        "text": t["user"]["text"], "attachments": t["user"]["attachments"],
        "notes": t["user"]["notes"],
        "model": t["model"], "mode": t["mode"], "answer": _answer(t),
        "tools": [(c["name"], c["ok"], c["summary"]) for c in _calls(t)],
        "outcome": t["outcome"],
    } for t in page["turns"]]


async def test_references_become_attachments_with_chips_and_refusals_attach_nothing(
        bare_client: AgentClient, model: ReplayServer, project: Path, tmp_path: Path) -> None:
    await _start(bare_client, model, project)
    model.load({"steps": [{"reply": {"text": "seen"}, "times": "*"}]})
    (project / ".env").write_text("API_KEY=not-for-the-model\n")
    outside = tmp_path / "outside.py"
    outside.write_text("SECRET_OUTSIDE = 1\n")
    calc = project / "src" / "calc.py"
    main = project / "src" / "main.py"
    unsaved = "from calc import add\n\nprint(add(20, 22))\n"
    bare_client.text_document_did_open(_open(main, unsaved))

    result = await bare_client.chat("Why is add wrong?", references=[
        {"kind": "file", "path": "src/calc.py"},
        {"kind": "buffer", "uri": main.as_uri()},
        {"kind": "selection", "uri": calc.as_uri(),
         "range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}}},
        {"kind": "diagnostics", "uri": calc.as_uri(), "diagnostics": [
            {"range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 9}},
             "message": "suspicious subtraction", "severity": 2}]},
        {"kind": "url", "url": "https://example.com/docs"},
        {"kind": "file", "path": ".env"},
        {"kind": "file", "uri": outside.as_uri()},
        {"kind": "file", "path": "src/deleted.py"},
    ])

    assert result["stopReason"] == "done", result.get("error")
    [turn] = bare_client.events(result["runId"], "turn")
    chips = {c["kind"]: c for c in turn["attachments"]}
    assert chips["file"] == {"kind": "file", "name": "src/calc.py", "lines": 2,
                             "size": calc.stat().st_size}
    # the buffer's unsaved text, not the file on disk
    assert chips["buffer"]["name"] == "src/main.py" and chips["buffer"]["size"] == len(unsaved)
    assert chips["selection"]["range"] == "2" and chips["selection"]["lines"] == 1
    assert chips["diagnostics"]["lines"] == 1
    refused = {r["name"]: r["reason"] for r in turn["refused"]}
    assert "no network" in refused["https://example.com/docs"]
    assert "deny list" in refused[".env"]
    assert "outside the workspace" in refused[str(outside)]
    assert "does not exist" in refused["src/deleted.py"]

    [request] = _chat_requests(model)
    user = request.body["messages"][-1]["content"]
    assert "## File: src/calc.py" in user and "print(add(20, 22))" in user
    assert "suspicious subtraction" in user and user.rstrip().endswith("Why is add wrong?")
    assert "not-for-the-model" not in user and "SECRET_OUTSIDE" not in user

    page = await bare_client.send("agentls/turns", {"sessionId": result["sessionId"]})
    [shown] = page["turns"]
    assert shown["user"]["text"] == "Why is add wrong?"
    assert shown["user"]["attachments"] == turn["attachments"]
    assert shown["user"]["refused"] == turn["refused"]


async def test_changes_and_a_symbol_are_attached_and_a_50_mb_file_is_trimmed(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    import subprocess

    for args in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t",
                                                 "commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=project, check=True)
    (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    big = project / "src" / "huge.txt"
    line = "0123456789 abcdefghij klmnopqrst uvwxyz ABCDEFGHIJ KLMNOPQRST UVWXYZ .,;:!?\n"
    big.write_text(line * (50_000_000 // len(line)))
    await _start(bare_client, model, project)
    model.load({"steps": [{"reply": {"text": "ok"}, "times": "*"}]})

    result = await bare_client.chat("Review.", references=[
        {"kind": "changes"}, {"kind": "file", "path": "src/huge.txt"},
        {"kind": "symbol", "name": "no_such_symbol_anywhere"}])

    assert result["stopReason"] == "done", result.get("error")
    [turn] = bare_client.events(result["runId"], "turn")
    chips = {c["kind"]: c for c in turn["attachments"]}
    assert chips["changes"]["name"] == "uncommitted changes (1 file)"
    assert chips["file"]["size"] >= 49_000_000 and "was cut" in chips["file"]["note"]
    assert turn["refused"][0]["kind"] == "symbol"
    user = _chat_requests(model)[-1].body["messages"][-1]["content"]
    assert "+    return a + b" in user and "## File: src/huge.txt (cut to" in user
    assert len(user) < 200_000


async def test_model_switch_between_turns_and_every_answer_records_its_model(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    await _start(bare_client, model, project)
    model.load({"models": ["scripted-model", "scripted-large"],
                "steps": [{"reply": {"text": "answer"}, "times": "*"}]})
    listing = await bare_client.send("agentls/models", {})
    [scripted] = [b for b in listing["backends"] if b["name"] == "scripted"]
    assert scripted["models"] == ["scripted-model", "scripted-large"]
    assert [m["name"] for m in listing["modes"]] == ["ask", "edit", "agent"]

    first = await bare_client.chat("one")
    session = first["sessionId"]
    with pytest.raises(JsonRpcException) as refused:
        await bare_client.send("agentls/setModel", {"sessionId": session, "model": "gpt-9"})
    assert "does not serve 'gpt-9'; it serves: scripted-model, scripted-large" in str(
        refused.value)
    switched = await bare_client.send("agentls/setModel",
                                      {"sessionId": session, "model": "scripted-large"})
    assert switched["model"] == "scripted-large" and switched["running"] is False
    second = await bare_client.chat("two", sessionId=session)

    assert [r.body["model"] for r in _chat_requests(model)] == ["scripted-model",
                                                                 "scripted-large"]
    page = await bare_client.send("agentls/turns", {"sessionId": session})
    assert [t["model"] for t in page["turns"]] == ["scripted-model", "scripted-large"]
    [turn] = bare_client.events(second["runId"], "turn")
    assert turn["model"] == "scripted-large"
    again = await bare_client.send("agentls/models", {"sessionId": session})
    assert again["session"]["model"] == "scripted-large"


async def test_modes_limit_the_tools_and_a_switch_during_a_run_applies_next_turn(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    await _start(bare_client, model, project)
    model.load({"steps": [{"match": {"user": "slow"}, "reply": {"text": "slow answer",
                                                                "first_delay_s": 1.0}},
                          {"reply": {"text": "ok"}, "times": "*"}]})
    with pytest.raises(JsonRpcException) as bad:
        await bare_client.chat("hi", mode="yolo")
    assert "the modes are ask" in str(bad.value)

    first = await bare_client.chat("hi", mode="ask")
    session = first["sessionId"]
    tools = {t["function"]["name"] for t in _chat_requests(model)[-1].body["tools"]}
    assert "read_file" in tools and not tools & {"write_file", "edit_file", "shell_exec"}

    running = bare_client.send("agentls/chat", {"prompt": "slow", "sessionId": session})
    await bare_client.wait_for_event(lambda e: e["kind"] == "turn" and e["sessionId"] == session
                                     and e["prompt"] == "slow")
    switched = await bare_client.send("agentls/setMode", {"sessionId": session, "mode": "edit"})
    assert switched["running"] is True and "applies from the next turn" in switched["message"]
    slow = await running
    [slow_turn] = bare_client.events(slow["runId"], "turn")
    assert slow_turn["mode"] == "ask"
    third = await bare_client.chat("next", sessionId=session)
    tools = {t["function"]["name"] for t in _chat_requests(model)[-1].body["tools"]}
    assert "edit_file" in tools and "shell_exec" not in tools
    [turn] = bare_client.events(third["runId"], "turn")
    assert turn["mode"] == "edit"


async def test_reopened_history_equals_what_was_shown_live_turn_by_turn(
        client: AgentClient, model: ReplayServer, project: Path) -> None:
    model.load({"steps": [
        {"match": {"user": "look", "tool_results": False},
         "reply": {"text": "Let me read it.",
                   "tool_calls": [{"id": "c1", "name": "read_file",
                                   "arguments": {"path": "src/calc.py"}},
                                  {"id": "c2", "name": "read_file",
                                   "arguments": {"path": "src/missing.py"}}]}},
        {"match": {"tool_results": True}, "reply": {"text": "It subtracts."}},
        {"match": {"user": "fix"}, "reply": {"text": "Fixed.", "tool_calls": [
            {"id": "c3", "name": "edit_file", "arguments": {"path": "src/calc.py", "edits": [
                {"search": "a - b", "replace": "a + b"}]}}]}},
        {"match": {"tool_results": True}, "reply": {"text": "Done."}},
        {"reply": {"text": "You are welcome."}, "times": "*"},
    ]})
    client.apply_result.applied = False  # the person rejects the edit: a note for the model
    first = await client.chat("look at calc", references=[{"kind": "file",
                                                           "path": "src/calc.py"}])
    session = first["sessionId"]
    second = await client.chat("fix it", sessionId=session)
    third = await client.chat("thanks", sessionId=session)
    runs = [first["runId"], second["runId"], third["runId"]]

    page = await client.send("agentls/turns", {"sessionId": session})
    assert page["total"] == 3 and page["hasMore"] is False
    assert _history_turns(page) == _live_turns(client, runs)
    shown = page["turns"]
    assert _answer(shown[0]) == "Let me read it.\n\nIt subtracts."
    assert [c["name"] for c in _calls(shown[0])] == ["read_file", "read_file"]
    assert _calls(shown[0])[1]["ok"] is False
    # What the model says after its edit is a claim until the review ends, live and reopened
    # alike (the review's outcome line follows it); what it said before is as it was.
    assert _answer(shown[1]) == "Fixed.\n\nproposed: Done."
    assert _calls(shown[1])[0]["summary"] == "proposed (path: src/calc.py)"
    # The steps are the one place of the answer and the calls: no copies beside them.
    assert all("text" not in t and "toolCalls" not in t for t in shown)
    # the note about the rejected edit is a field, never the person's words
    assert shown[2]["user"]["text"] == "thanks"
    assert shown[2]["user"]["notes"] and "AgentLS note" not in shown[2]["user"]["text"]
    assert all(t["durationMs"] is not None and t["outcome"] == "done" for t in shown)

    older = await client.send("agentls/turns", {"sessionId": session, "limit": 2})
    assert [t["index"] for t in older["turns"]] == [1, 2] and older["hasMore"] is True
    rest = await client.send("agentls/turns", {"sessionId": session, "limit": 2,
                                               "before": older["start"]})
    assert [t["index"] for t in rest["turns"]] == [0] and rest["hasMore"] is False


async def test_mentions_complete_files_and_the_fixed_references(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    await _start(bare_client, model, project)
    (project / ".env").write_text("X=1\n")
    found = await bare_client.send("agentls/mentions", {"query": "file:calc"})
    assert found["items"][0]["text"] == "#file:src/calc.py"
    assert found["items"][0]["reference"] == {"kind": "file", "path": "src/calc.py"}
    fixed = await bare_client.send("agentls/mentions", {"query": "bu"})
    assert fixed["items"][0]["reference"] == {"kind": "buffer"}
    every = await bare_client.send("agentls/mentions", {"query": "", "kinds": ["file"]})
    assert ".env" not in {i["label"] for i in every["items"]}
    with pytest.raises(JsonRpcException):
        await bare_client.send("agentls/mentions", {"query": 3})


def _open(path: Path, text: str) -> Any:
    from lsprotocol import types as lsp

    return lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=path.as_uri(), language_id="python", version=1, text=text))


@pytest.fixture
def silent_server() -> Iterator[socket.socket]:
    """A model server that takes connections and never answers (a hung or firewalled host):
    listening, nothing accepted, so a request waits until its client gives up."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock


def _connections(sock: socket.socket) -> int:
    """How many connections reached the silent server (each accepted and then left open)."""
    sock.setblocking(False)
    count = 0
    while True:
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


async def test_models_answer_promptly_when_a_backend_does_not_answer(
        bare_client: AgentClient, model: ReplayServer, project: Path,
        silent_server: socket.socket) -> None:
    options = options_for(model)
    port = silent_server.getsockname()[1]
    options["backends"]["silent"] = {"base_url": f"http://127.0.0.1:{port}/v1",
                                     "model": "silent-model", "api_key_env": None}
    await initialize(bare_client, client_capabilities("visual-studio-code"), project, options)
    model.load({"models": ["scripted-model", "scripted-large"], "steps": []})

    # From the configuration alone: nothing asked over the network.
    configured = await bare_client.send("agentls/models", {"probe": False})
    shown = {b["name"]: b for b in configured["backends"]}
    assert shown["silent"]["models"] == ["silent-model"]
    assert shown["silent"]["status"] == shown["scripted"]["status"] == "unchecked"
    assert shown["scripted"]["active"] and configured["modes"]
    assert _connections(silent_server) == 0
    assert not [r for r in model.requests if r.path.endswith("/models")]

    # Probed side by side, each within its bound: the silent one is reported, not waited for.
    started = time.monotonic()
    probed = await bare_client.send("agentls/models", {})
    took = time.monotonic() - started
    found = {b["name"]: b for b in probed["backends"]}
    assert found["scripted"]["status"] == "available"
    assert found["scripted"]["models"] == ["scripted-model", "scripted-large"]
    assert found["silent"]["status"] == "unreachable"
    assert "timed out" in found["silent"]["detail"], found["silent"]
    assert _connections(silent_server) >= 1  # it was asked
    # The bound, not the silent server, ended the wait (generous: a shared CI machine).
    assert took < models.PROBE_TIMEOUT_S + 3.0, took

    with pytest.raises(JsonRpcException) as bad:
        await bare_client.send("agentls/models", {"probe": "yes"})
    assert "'probe' must be true or false" in str(bad.value)
