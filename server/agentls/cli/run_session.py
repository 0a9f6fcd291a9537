"""The session a headless run continues (``--session ID`` or the start of one), held for
this process by the cross-process session lock, and the session store it lives in
(``.agentls/state.db``). What goes wrong stops the run before the model is asked
(``Stopped``), with what to do next."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from agentls.cli.report import Stopped
from agentls.engine.sessions.lock import SessionBusy, SessionLock
from agentls.engine.sessions.store import SessionInfo, SessionStore


def open_store(root: Path) -> SessionStore:
    try:
        return SessionStore.for_workspace(root)
    except (OSError, sqlite3.Error) as exc:
        raise Stopped("artifacts-error", f"cannot open the session store in "
                      f"{root / '.agentls'}: {exc}",
                      "run from a folder you can write to (--cwd DIR); if "
                      ".agentls/state.db is damaged, move it aside (a new one is made)"
                      ) from None


def open_session(store: SessionStore, wanted: str, root: Path, *, wait: bool,
                 notify: Callable[[str], None]) -> tuple[SessionInfo, SessionLock]:
    """The session whose id is or starts with ``wanted``, and its lock (``wait``: queue
    behind a run that holds it, saying so through ``notify``)."""
    session = store.get_session(wanted)
    if session is None:
        matches = [s for s in store.list_sessions(limit=10_000)
                   if s.id.startswith(wanted.upper())]
        if len(matches) > 1:
            raise Stopped("usage", f"{wanted!r} is the start of {len(matches)} sessions' "
                          "ids", "give more of the id (see `agentls sessions`)")
        session = matches[0] if matches else None
    if session is None:
        raise Stopped("usage", f"no session {wanted!r} in this workspace ({root})",
                      "list them with `agentls sessions`, or leave out --session to "
                      "start a new one")
    try:
        lock = SessionLock.acquire(root, session.id, wait=wait, notify=notify)
    except SessionBusy as exc:
        raise Stopped("session-busy", str(exc), "wait for it to finish, or pass --wait "
                      "to queue behind it") from None
    return session, lock
