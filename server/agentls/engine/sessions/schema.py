"""The schema of ``.agentls/state.db`` and its migrations: each one a function, applied in order
in one transaction and recorded in ``PRAGMA user_version``; a file from a newer AgentLS is
refused rather than misread."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence


class SchemaTooNew(RuntimeError):
    """The database was written by a newer AgentLS than this one."""


Migration = Callable[[sqlite3.Connection], None]


_SCHEMA_V1 = (
    """CREATE TABLE workspaces (
        id TEXT PRIMARY KEY,
        root_path TEXT UNIQUE NOT NULL,
        created_at REAL NOT NULL,
        last_active REAL NOT NULL
    )""",
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        title TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        backend TEXT NOT NULL,
        model TEXT NOT NULL,
        mode TEXT NOT NULL CHECK (mode IN ('chat', 'automation')),
        metadata TEXT
    )""",
    "CREATE INDEX idx_sessions_updated ON sessions(updated_at DESC, id DESC)",
    """CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        content TEXT,
        tool_calls TEXT,
        tool_call_id TEXT,
        tool_name TEXT,
        kind TEXT NOT NULL DEFAULT 'message' CHECK (kind IN ('message', 'summary', 'actions')),
        metadata TEXT,
        created_at REAL NOT NULL
    )""",
    "CREATE UNIQUE INDEX idx_messages_session_seq ON messages(session_id, seq)",
    """CREATE TABLE command_history (
        id INTEGER PRIMARY KEY,
        session_id TEXT REFERENCES sessions(id) ON DELETE CASCADE,
        command TEXT NOT NULL,
        created_at REAL NOT NULL
    )""",
    "CREATE INDEX idx_command_history_session ON command_history(session_id)",
)


def _schema_v1(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V1:
        conn.execute(statement)


# Append-only: migration N (1-based) brings a database from user_version N-1 to N.
MIGRATIONS: tuple[Migration, ...] = (_schema_v1,)


SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Bring the database to ``len(migrations)`` in one transaction; return the new version.

    The version is read again under the write lock, so two processes opening a fresh file at
    the same moment apply each migration once.
    """
    target = len(migrations)
    if _user_version(conn) == target:
        return target
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = _user_version(conn)
        if current > target:
            raise SchemaTooNew(
                f"this state.db has schema version {current} but this AgentLS knows only "
                f"{target}; upgrade AgentLS or delete .agentls/state.db"
            )
        for migration in migrations[current:]:
            migration(conn)
        conn.execute(f"PRAGMA user_version = {int(target)}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return target


def _user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])
