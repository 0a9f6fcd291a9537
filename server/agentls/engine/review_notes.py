"""Notes to the model: what a front-end learned about a turn's changes after the run (the
person rejected them, a file moved on, the run was cancelled before they were shown). One
owner, data throughout:

- a front-end records the review of a run's changes with ``record_review`` (the run's
  ``actions`` message gets ``applied`` / ``failure_reason``, the session gets the notes);
- the next run on the session takes them (``take``) and stores them as the ``notes`` field
  of its user message, beside the person's text, never inside it;
- the model reads them first: ``for_model`` renders them into the user message of every
  request (``[AgentLS note: …]`` lines before the text), the same way on every iteration and
  every later run, so providers' prefix caches still hit;
- readers of the history (the editor's panel, the chat buffer) get them as a field
  (``display``), never as text to parse back.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentls.llm.messages import Message

if TYPE_CHECKING:
    from agentls.engine.sessions.store import SessionStore

PENDING_KEY = "pending_notes"  # session metadata: notes waiting for the next run
MESSAGE_KEY = "notes"  # a user message's metadata: the notes the model read with it
CANCELLED_NOTE = ("none of your changes from the last turn were applied: the person "
                  "cancelled the run before they were shown, so the files are as they were")

_LEGACY = re.compile(r"^\[AgentLS note: ([^\n]*)\]\n")  # sessions stored before notes were data


def pending(store: SessionStore, session_id: str) -> list[str]:
    """The notes waiting for the session's next run."""
    session = store.get_session(session_id)
    found = session.metadata.get(PENDING_KEY) if session is not None else None
    return [str(n) for n in found] if isinstance(found, list) else []


def add(store: SessionStore, session_id: str, notes: Iterable[str]) -> None:
    new = list(notes)
    if new:
        store.set_session_metadata(session_id, **{PENDING_KEY: pending(store, session_id) + new})


def clear(store: SessionStore, session_id: str) -> None:
    store.set_session_metadata(session_id, **{PENDING_KEY: []})


def record_review(store: SessionStore, session_id: str, actions_message_id: int | None, *,
                  applied: bool | None, failure_reason: str | None,
                  review: list[dict[str, Any]] | None = None,
                  notes: Sequence[str] = ()) -> None:
    """What became of a run's changes: on its ``actions`` message (``review``: per file, what
    was kept, when only some of it was), and the notes the model reads first on the session's
    next run. Every front-end (lsp/, acp/) records it here."""
    if actions_message_id is not None:
        extra = {"review": review} if review else {}
        store.update_metadata(actions_message_id, applied=applied,
                              failure_reason=failure_reason, **extra)
    add(store, session_id, notes)


def record_withdrawn(store: SessionStore, session_id: str,
                     actions_message_id: int | None = None) -> None:
    """A cancelled run's changes were never sent: the model must not think them applied."""
    record_review(store, session_id, actions_message_id, applied=False,
                  failure_reason="cancelled before it was sent", notes=[CANCELLED_NOTE])


def message_metadata(notes: Sequence[str]) -> dict[str, Any] | None:
    """The metadata of a user message sent with ``notes`` (None without any)."""
    return {MESSAGE_KEY: list(notes)} if notes else None


def of_message(metadata: Mapping[str, Any]) -> list[str]:
    found = metadata.get(MESSAGE_KEY)
    return [str(n) for n in found] if isinstance(found, list) else []


def for_model(message: Message, notes: Sequence[str]) -> Message:
    """The user message as the model reads it: the notes first, then the message."""
    if not notes:
        return message
    lines = "\n".join(f"[AgentLS note: {note}]" for note in notes)
    return dataclasses.replace(message, content=f"{lines}\n\n{message.content or ''}")


def display(content: str, metadata: Mapping[str, Any]) -> tuple[list[str], str]:
    """A stored user message's notes and its own text, for readers of the history. Sessions
    stored before notes were data carry them as a prefix of the text: split here, once."""
    notes = of_message(metadata)
    if notes:
        return notes, content
    rest = content
    found = _LEGACY.match(rest)
    while found is not None:
        notes.append(found.group(1))
        rest = rest[found.end():]
        found = _LEGACY.match(rest)
    return (notes, rest.removeprefix("\n")) if notes else ([], content)
