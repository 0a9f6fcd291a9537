"""Persistent sessions: one SQLite file per workspace, ``.agentls/state.db`` (DESIGN.md decision 9).

Every message is committed on its own as soon as it is appended, so a killed process loses at
most the message it was writing. WAL mode lets the LSP server and a CLI process share the file;
each thread gets its own connection. Nothing here ever holds a credential, and ``redact`` drops
anything that looks like one from metadata before it is written.

The schema and its migrations are in ``session_schema.py``; the ``.agentls/`` folder and its
``.gitignore`` in ``state_dir.py``. It stays one module: this is the store alone
(sessions, messages and their metadata, the turns' boundaries, the command history), each
method one small transaction over the same tables.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentls.engine.sessions.schema import (
    migrate,
)
from agentls.engine.sessions.state_dir import (
    STATE_DB,
    STATE_DIR,
    ensure_state_dir,
)
from agentls.llm.messages import Message, ToolCall, canonical_json
from agentls.policy import redaction
from agentls.policy.redaction import without_credential_keys as redact

SessionMode = Literal["chat", "automation"]
MessageKind = Literal["message", "summary", "actions"]

TITLE_MAX_CHARS = 60
BUSY_TIMEOUT_MS = 5000


class SessionNotFound(LookupError):
    """The session id names no stored session."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id!r} does not exist (deleted, or from another workspace); "
            "list the sessions and pick one, or start a new session"
        )
        self.session_id = session_id


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    workspace_id: str
    title: str | None
    created_at: float
    updated_at: float
    backend: str
    model: str
    mode: SessionMode
    metadata: dict[str, Any] = field(default_factory=dict)
    message_count: int = 0


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message as stored: its row id, its position in the session, and the message itself."""

    id: int
    session_id: str
    seq: int
    kind: MessageKind
    created_at: float
    metadata: dict[str, Any]
    message: Message


# --- secrets ----------------------------------------------------------------------------------


def _metadata_json(metadata: Mapping[str, Any] | None) -> str | None:
    if not metadata:
        return None
    return canonical_json(redaction.redact_data(redact(metadata)))  # named keys, then values


def _load_metadata(text: str | None) -> dict[str, Any]:
    return json.loads(text) if text else {}


# --- ids and titles ---------------------------------------------------------------------------

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_id_lock = threading.Lock()
_last_id: list[int] = [0]


def new_session_id() -> str:
    """A ULID: 26 characters, sorted by creation time, strictly increasing within a process."""
    value = ((time.time_ns() // 1_000_000) << 80) | int.from_bytes(os.urandom(10), "big")
    with _id_lock:
        # Same millisecond as the last id: step past it so ids keep their creation order.
        value = max(value, _last_id[0] + 1)
        _last_id[0] = value
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def title_from(text: str | None) -> str | None:
    """The first user message as a one-line title of at most ``TITLE_MAX_CHARS`` characters."""
    line = " ".join((text or "").split())
    if not line:
        return None
    if len(line) <= TITLE_MAX_CHARS:
        return line
    return line[: TITLE_MAX_CHARS - 1].rstrip() + "…"


_SESSION_COLUMNS = (
    "s.id, s.workspace_id, s.title, s.created_at, s.updated_at, s.backend, s.model, s.mode,"
    " s.metadata, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)"
)


class SessionStore:
    """Sessions, their messages and the person's command history in one SQLite file.

    Methods are synchronous and short (one small transaction each); they are safe to call from
    any thread, each thread using its own connection.
    """

    def __init__(self, db_path: Path, *, workspace_root: Path | None = None) -> None:
        self.path = db_path
        if workspace_root is None:
            in_state_dir = db_path.parent.name == STATE_DIR
            workspace_root = db_path.parent.parent if in_state_dir else db_path.parent
        self.workspace_root = workspace_root.resolve()
        self.workspace_id = hashlib.sha256(str(self.workspace_root).encode()).hexdigest()[:16]
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._closed = False
        db_path.parent.mkdir(parents=True, exist_ok=True)
        migrate(self._conn())
        self._touch_workspace()

    @classmethod
    def for_workspace(cls, root: Path) -> SessionStore:
        """The store of the workspace at ``root``: ``<root>/.agentls/state.db``."""
        root = root.resolve()
        return cls(ensure_state_dir(root) / STATE_DB, workspace_root=root)

    # connections

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise RuntimeError(f"the session store {self.path} is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            # Autocommit; writes open their own short BEGIN IMMEDIATE transactions.
            conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False,
                timeout=BUSY_TIMEOUT_MS / 1000,
            )
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._local.conn = conn
            with self._connections_lock:
                self._connections.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, committed before returning: a kill after it loses nothing."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        """Close every connection this store opened, in every thread."""
        with self._connections_lock:
            self._closed = True
            for conn in self._connections:
                conn.close()
            self._connections.clear()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _touch_workspace(self) -> None:
        now = time.time()
        with self._write() as conn:
            conn.execute(
                "INSERT INTO workspaces (id, root_path, created_at, last_active)"
                " VALUES (?, ?, ?, ?)"
                " ON CONFLICT(root_path) DO UPDATE SET last_active = excluded.last_active",
                (self.workspace_id, str(self.workspace_root), now, now),
            )

    # sessions

    def create_session(
        self,
        *,
        backend: str,
        model: str,
        mode: SessionMode = "chat",
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SessionInfo:
        session_id = new_session_id()
        now = time.time()
        with self._write() as conn:
            conn.execute(
                "INSERT INTO sessions (id, workspace_id, title, created_at, updated_at,"
                " backend, model, mode, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (session_id, self.workspace_id, title, now, now, backend, model, mode,
                 _metadata_json(metadata)),
            )
            conn.execute(
                "UPDATE workspaces SET last_active = ? WHERE id = ?", (now, self.workspace_id)
            )
        return SessionInfo(
            session_id, self.workspace_id, title, now, now, backend, model, mode,
            _load_metadata(_metadata_json(metadata)), 0,
        )

    def get_session(self, session_id: str) -> SessionInfo | None:
        row = self._conn().execute(
            f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.id = ?", (session_id,)
        ).fetchone()
        return _session_info(row) if row else None

    def list_sessions(self, limit: int = 50) -> list[SessionInfo]:
        """This workspace's sessions, most recently active first."""
        rows = self._conn().execute(
            f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.workspace_id = ?"
            " ORDER BY s.updated_at DESC, s.id DESC LIMIT ?",
            (self.workspace_id, limit),
        ).fetchall()
        return [_session_info(row) for row in rows]

    def set_session_metadata(self, session_id: str, **fields: Any) -> bool:
        """Merge ``fields`` into the session's metadata; False when the session is gone."""
        return self._merge_metadata("sessions", session_id, fields)

    def set_session_backend(self, session_id: str, backend: str, model: str) -> bool:
        with self._write() as conn:  # for the session's next turns; False when it is gone
            return conn.execute("UPDATE sessions SET backend = ?, model = ? WHERE id = ?",
                                (backend, model, session_id)).rowcount > 0

    def delete_session(self, session_id: str) -> bool:
        """Delete a session with its messages and commands; False when there was none."""
        with self._write() as conn:
            cursor = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        return cursor.rowcount > 0

    # messages

    def append(
        self,
        session_id: str,
        message: Message,
        *,
        kind: MessageKind = "message",
        metadata: Mapping[str, Any] | None = None,
    ) -> int:
        """Store ``message`` at the end of the session and commit; return its id.

        The first user message names a session that has no title yet.
        """
        tool_calls = (
            canonical_json([
                {"id": call.id, "name": call.name, "arguments": call.arguments}
                for call in message.tool_calls
            ])
            if message.tool_calls else None
        )
        row = (
            session_id, message.role, message.content, tool_calls, message.tool_call_id,
            message.name, kind, _metadata_json(metadata), time.time(),
            title_from(message.content) if message.role == "user" else None,
        )
        # A key the model echoed, or a tool read from a file, is not kept.
        clean = tuple(redaction.redact(v) if isinstance(v, str) else v for v in row)
        try:
            return self._insert_message(clean)
        except UnicodeEncodeError:
            # A lone surrogate (a model can emit "\ud800" in JSON) cannot be stored as UTF-8.
            return self._insert_message(
                tuple(_valid_utf8(v) if isinstance(v, str) else v for v in clean)
            )

    def _insert_message(self, row: tuple[Any, ...]) -> int:
        session_id, *columns, now, title = row
        try:
            with self._write() as conn:
                # seq is computed under the write lock, so two writers never share one.
                cursor = conn.execute(
                    "INSERT INTO messages (session_id, role, content, tool_calls,"
                    " tool_call_id, tool_name, kind, metadata, created_at, seq)"
                    " SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE(MAX(seq), 0) + 1"
                    " FROM messages WHERE session_id = ?",
                    (session_id, *columns, now, session_id),
                )
                conn.execute(
                    "UPDATE sessions SET updated_at = ?, title = COALESCE(title, ?)"
                    " WHERE id = ?",
                    (now, title, session_id),
                )
        except sqlite3.IntegrityError as exc:
            if "FOREIGN KEY" in str(exc):
                raise SessionNotFound(session_id) from exc
            raise
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def history(self, session_id: str, *, include_summaries: bool = True) -> list[StoredMessage]:
        """The session's messages in order (empty for an unknown session)."""
        query = (
            "SELECT id, seq, role, content, tool_calls, tool_call_id, tool_name, kind,"
            " metadata, created_at FROM messages WHERE session_id = ?"
        )
        if not include_summaries:
            query += " AND kind != 'summary'"
        rows = self._conn().execute(query + " ORDER BY seq", (session_id,)).fetchall()
        return [_stored_message(session_id, row) for row in rows]

    def turn_starts(self, session_id: str) -> list[int]:
        """The seq of each request the person made (user messages, not the ones AgentLS
        adds itself, marked ``internal`` in their metadata), in order."""
        rows = self._conn().execute(
            "SELECT seq FROM messages WHERE session_id = ? AND role = 'user'"
            " AND kind = 'message' AND (metadata IS NULL OR metadata NOT LIKE '%\"internal\":%')"
            " ORDER BY seq", (session_id,)).fetchall()
        return [row[0] for row in rows]

    def display_rows(self, session_id: str, first_seq: int,
                     end_seq: int | None) -> list[tuple[Any, ...]]:
        """Raw rows ``(seq, role, content, tool_calls, tool_call_id, kind, metadata,
        created_at)`` with ``first_seq <= seq < end_seq`` (None: to the end), for the history
        a person reads (engine/display_history.py). The content of what the history does not
        show (a request whose metadata keeps the person's words, a tool result whose metadata
        keeps its summary) is left unread: NULL."""
        return self._conn().execute(
            "SELECT seq, role, CASE WHEN (role = 'user' AND metadata LIKE '%\"prompt\":%')"
            " OR (role = 'tool' AND metadata LIKE '%\"summary\":%') THEN NULL ELSE content END,"
            " tool_calls, tool_call_id, kind, metadata, created_at FROM messages"
            " WHERE session_id = ? AND seq >= ? AND seq < ? ORDER BY seq",
            (session_id, first_seq, end_seq if end_seq is not None else 2**62)).fetchall()

    def update_metadata(self, message_id: int, **fields: Any) -> bool:
        """Merge ``fields`` into a stored message's metadata (e.g. whether the person applied
        the edit an 'actions' summary describes); False when the message is gone."""
        return self._merge_metadata("messages", message_id, fields)

    # command history

    def record_command(self, session_id: str | None, text: str) -> None:
        """Remember a prompt the person sent; blank prompts are not worth recalling."""
        if not text.strip():
            return
        with self._write() as conn:
            conn.execute(
                "INSERT INTO command_history (session_id, command, created_at) VALUES (?, ?, ?)",
                (session_id, text, time.time()),
            )

    def commands(self, limit: int = 500, *, session_id: str | None = None) -> list[str]:
        """The last ``limit`` prompts, oldest first (the order a line editor loads them in)."""
        if session_id is None:
            rows = self._conn().execute(
                "SELECT command FROM command_history ORDER BY id DESC LIMIT ?", (limit,)
            ).fetchall()
        else:
            rows = self._conn().execute(
                "SELECT command FROM command_history WHERE session_id = ?"
                " ORDER BY id DESC LIMIT ?",
                (session_id, limit),
            ).fetchall()
        return [row[0] for row in reversed(rows)]

    # helpers

    def _merge_metadata(
        self, table: Literal["sessions", "messages"], row_id: str | int, fields: dict[str, Any]
    ) -> bool:
        with self._write() as conn:
            row = conn.execute(
                f"SELECT metadata FROM {table} WHERE id = ?", (row_id,)
            ).fetchone()
            if row is None:
                return False
            merged = _load_metadata(row[0])
            merged.update(fields)
            conn.execute(
                f"UPDATE {table} SET metadata = ? WHERE id = ?",
                (_metadata_json(merged), row_id),
            )
        return True


def _valid_utf8(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")


def _session_info(row: tuple[Any, ...]) -> SessionInfo:
    sid, workspace_id, title, created, updated, backend, model, mode, metadata, count = row
    return SessionInfo(
        sid, workspace_id, title, created, updated, backend, model, mode,
        _load_metadata(metadata), count,
    )


def _stored_message(session_id: str, row: tuple[Any, ...]) -> StoredMessage:
    mid, seq, role, content, tool_calls, tool_call_id, tool_name, kind, metadata, created = row
    calls = tuple(
        ToolCall(call["id"], call["name"], call["arguments"])
        for call in json.loads(tool_calls)
    ) if tool_calls else ()
    message = Message(role, content, calls, tool_call_id, tool_name)
    return StoredMessage(
        mid, session_id, seq, kind, created, _load_metadata(metadata), message
    )
