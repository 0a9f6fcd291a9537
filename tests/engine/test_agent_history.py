"""What a session's next request holds: compaction bookkeeping across a restart, and stored
histories the provider would refuse (calls without results, results without calls)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentls.engine.loop.agent import Agent
from agentls.engine.sessions.store import SessionStore
from agentls.llm.messages import Message, ToolCall
from agentls.llm.pool import BackendPool
from tests.engine.conftest import Harness, settings_for


def conversation(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of a request after the system levels."""
    return [m for m in body["messages"] if m["role"] != "system"]


def fill_session(store: SessionStore, sid: str, turns: int) -> None:
    """Turns of user / assistant, a tool call now and then, and the 'actions' summaries runs
    store after changing something (they are not part of what the model is sent)."""
    for i in range(turns):
        store.append(sid, Message.user(f"turn {i}"))
        if i % 5 == 0:
            store.append(sid, Message.assistant(None, [ToolCall(f"c{i}", "read_file",
                                                                '{"path": "README.md"}')]))
            store.append(sid, Message.tool(f"c{i}", '{"ok": true}', "read_file"))
        store.append(sid, Message.assistant(f"reply {i}"))
        if i % 3 == 0:
            store.append(sid, Message.assistant(f"edited a{i}.py (+1 −1)"), kind="actions",
                         metadata={"run_id": f"r{i}", "applied": True})


async def test_compaction_keeps_exactly_the_unsummarised_messages_after_a_restart(
    harness: Harness, tmp_path: Path
) -> None:
    sid = harness.session()
    fill_session(harness.store, sid, 60)
    harness.server.load({"steps": [
        {"match": {"stream": False}, "reply": {"text": "We discussed the early turns."}},
        {"match": {"user": "first"}, "reply": {"text": "first answer"}},
        {"match": {"user": "second"}, "reply": {"text": "second answer"}},
    ]})
    result, _ = await harness.run("first question", session_id=sid)
    assert result.stop_reason == "done"
    first = conversation(harness.server.requests[-1].body)
    assert first[0]["content"].endswith("We discussed the early turns.")
    kept = first[1:-1]  # what compaction left as it was, before the new question
    assert kept and kept[-1]["content"] == "reply 59"
    summarised = harness.server.requests[-2].body["messages"][-1]["content"]
    # Every message is either summarised or kept: the first kept one directly follows the
    # last summarised one.
    first_kept = kept[0]["content"] or ""
    number = int(first_kept.split()[-1]) if first_kept.startswith(("turn", "reply")) else None
    assert number is not None
    assert f"turn {number - 1}" in summarised or f"reply {number - 1}" in summarised
    assert first_kept not in summarised.split("\n")

    # A new process: another store on the same file, another Agent.
    settings = settings_for(harness.server)
    pool = BackendPool(settings)
    store = SessionStore.for_workspace(harness.root)
    try:
        agent = Agent(settings, pool, store)
        reopened = Harness(agent, store, harness.root, harness.server, pool)
        again, _ = await reopened.run("second question", session_id=sid)
    finally:
        await pool.aclose()
        store.close()
    assert again.stop_reason == "done"
    second = conversation(harness.server.requests[-1].body)
    assert second[:-1] == [*first, {"role": "assistant", "content": "first answer"}]
    assert [r for r in harness.server.requests if not r.body.get("stream")][1:] == []


async def test_stored_orphans_are_answered_or_left_out_of_the_request(harness: Harness) -> None:
    sid = harness.session()
    store = harness.store
    store.append(sid, Message.user("read two files"))
    store.append(sid, Message.assistant(None, [
        ToolCall("a1", "read_file", '{"path": "README.md"}'),
        ToolCall("a2", "read_file", '{"path": "src/calc.py"}')]))
    store.append(sid, Message.tool("a1", '{"ok": true}', "read_file"))
    # Killed before a2's result; another process then wrote a result whose call it never
    # stored.
    store.append(sid, Message.tool("zz", '{"ok": true}', "read_file"))
    harness.server.load({"steps": [{"reply": {"text": "ok"}}]})
    result, _ = await harness.run("go on", session_id=sid)
    assert result.stop_reason == "done"
    sent = conversation(harness.server.requests[-1].body)
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "user"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ["a1", "a2"]
    assert json.loads(sent[3]["content"])["error"] == "NOT_RUN"
