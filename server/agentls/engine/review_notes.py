"""What the model hears first on a session's next turn about the last turn's changes: a
rejection, a stale file, a run cancelled before its edit was shown. Kept in the session's
metadata until that turn reads them; every front-end (lsp/, acp/) records them here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentls.engine.sessions import SessionStore
    from agentls.tools.changeset import ChangeSet

NOTES_KEY = "pending_notes"
CANCELLED_NOTE = ("none of your changes from the last turn were applied: the person "
                  "cancelled the run before they were shown, so the files are as they were")


def pending_notes(store: SessionStore, session_id: str) -> list[str]:
    session = store.get_session(session_id)
    notes = session.metadata.get(NOTES_KEY) if session is not None else None
    return [str(n) for n in notes] if isinstance(notes, list) else []


def set_notes(store: SessionStore, session_id: str, notes: Sequence[str]) -> None:
    store.set_session_metadata(session_id, **{NOTES_KEY: list(notes)})


def add_notes(store: SessionStore, session_id: str, notes: Iterable[str]) -> None:
    new = list(notes)
    if new:
        set_notes(store, session_id, pending_notes(store, session_id) + new)


def record_withdrawn(store: SessionStore, session_id: str, changeset: ChangeSet,
                     actions_message_id: int | None = None) -> None:
    """A cancelled run's changes were never sent: the model must not think them applied."""
    if changeset.is_empty():
        return
    if actions_message_id is not None:
        store.update_metadata(actions_message_id, applied=False,
                              failure_reason="cancelled before it was sent")
    add_notes(store, session_id, [CANCELLED_NOTE])
