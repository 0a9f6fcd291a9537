"""Notes to the model are data: the engine takes the session's pending notes, stores them as
a field of the run's user message (the person's text stays as typed), and renders them into
what the model reads, the same on the next run (engine/notes.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentls.engine import review_notes as notes
from agentls.engine.sessions.store import SessionStore
from agentls.llm.messages import Message
from tests.engine.conftest import Harness

REJECTED = "the person rejected your changes to src/calc.py"


def user_contents(body: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


async def test_pending_notes_are_stored_as_data_and_told_to_the_model_first(
        harness: Harness) -> None:
    harness.server.load({"steps": [{"match": {}, "times": 2, "reply": {"text": "ok"}}]})
    session_id = harness.session()
    notes.add(harness.store, session_id, [REJECTED])

    await harness.run("why not?", session_id=session_id)

    told = user_contents(harness.server.requests[-1].body)[-1]
    assert told == f"[AgentLS note: {REJECTED}]\n\nwhy not?"
    stored = [m for m in harness.store.history(session_id) if m.message.role == "user"]
    assert stored[-1].message.content == "why not?"  # the person's words, as typed
    assert stored[-1].metadata["notes"] == [REJECTED]
    assert notes.pending(harness.store, session_id) == []  # told once

    await harness.run("and now?", session_id=session_id)

    first, second = user_contents(harness.server.requests[-1].body)[-2:]
    assert first == told  # the earlier request's prefix is kept: prefix caches still hit
    assert second == "and now?"


def test_review_is_recorded_on_the_actions_message_and_as_pending_notes(
        tmp_path: Path) -> None:
    store = SessionStore.for_workspace(tmp_path)
    session_id = store.create_session(backend="b", model="m").id
    actions = store.append(session_id, Message.assistant("edited a.py"), kind="actions",
                           metadata={"applied": None})

    notes.record_review(store, session_id, actions, applied=False, failure_reason="no",
                        notes=[REJECTED])
    notes.record_withdrawn(store, session_id)

    stored = next(m for m in store.history(session_id) if m.id == actions)
    assert stored.metadata == {"applied": False, "failure_reason": "no"}
    assert notes.pending(store, session_id) == [REJECTED, notes.CANCELLED_NOTE]
    store.close()


def test_sessions_stored_with_the_old_text_prefix_display_their_notes_apart() -> None:
    legacy = f"[AgentLS note: {REJECTED}]\n[AgentLS note: second]\n\nthanks"
    assert notes.display(legacy, {}) == ([REJECTED, "second"], "thanks")
    assert notes.display("thanks", {"notes": ["n"]}) == (["n"], "thanks")
    assert notes.display("[AgentLS note: unclosed", {}) == ([], "[AgentLS note: unclosed")
