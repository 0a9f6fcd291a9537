"""Session store: schema, exact round-trips, shared access, redaction, surviving a SIGKILL."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from agentls.engine.sessions.schema import SCHEMA_VERSION, SchemaTooNew, migrate
from agentls.engine.sessions.state_dir import STATE_GITIGNORE
from agentls.engine.sessions.store import SessionNotFound, SessionStore, new_session_id, redact
from agentls.llm.messages import Message, ToolCall


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore.for_workspace(tmp_path)


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path)


# --- files and schema -------------------------------------------------------------------------


def test_for_workspace_hides_its_state_from_git(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with SessionStore.for_workspace(tmp_path) as store:
        store.create_session(backend="openai", model="m")
        assert store.path == tmp_path / ".agentls" / "state.db"
    state = tmp_path / ".agentls"
    for name in ("index.db", "runs/1/meta.json", "scratch/x", "cache/y", "explain/z.md"):
        (state / name).parent.mkdir(parents=True, exist_ok=True)
        (state / name).write_text("local state\n")
    (state / "config.toml").write_text("max_iterations = 3\n")
    (state / "instructions.md").write_text("Use tabs.\n")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )
    # Only what the team shares shows up: the ignore file itself, config and instructions.
    assert sorted(status.stdout.split()) == sorted([
        "??", "??", "??", ".agentls/.gitignore", ".agentls/config.toml",
        ".agentls/instructions.md"])


def test_an_existing_gitignore_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / ".agentls").mkdir()
    (tmp_path / ".agentls" / ".gitignore").write_text("state.db\n")
    SessionStore.for_workspace(tmp_path).close()
    assert (tmp_path / ".agentls" / ".gitignore").read_text() == "state.db\n"


def test_the_catch_all_gitignore_of_older_versions_is_upgraded(tmp_path: Path) -> None:
    (tmp_path / ".agentls").mkdir()
    (tmp_path / ".agentls" / ".gitignore").write_text("*\n")
    SessionStore.for_workspace(tmp_path).close()
    assert (tmp_path / ".agentls" / ".gitignore").read_text() == STATE_GITIGNORE
    assert not [p for p in (tmp_path / ".agentls").iterdir() if p.name.endswith(".tmp")]


def test_connection_settings_and_schema_version(store: SessionStore) -> None:
    conn = store._conn()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM messages WHERE session_id = ? ORDER BY seq", ("x",)
    ).fetchall()
    assert "idx_messages_session_seq" in str(plan)


def test_a_later_migration_adds_a_column_once(tmp_path: Path) -> None:
    SessionStore(tmp_path / "state.db").close()

    def add_pinned(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")

    from agentls.engine.sessions.schema import MIGRATIONS

    conn = raw(tmp_path / "state.db")
    conn.isolation_level = None
    assert migrate(conn, (*MIGRATIONS, add_pinned)) == SCHEMA_VERSION + 1
    assert migrate(conn, (*MIGRATIONS, add_pinned)) == SCHEMA_VERSION + 1  # not applied twice
    columns = [row[1] for row in conn.execute("PRAGMA table_info(sessions)")]
    assert columns.count("pinned") == 1
    conn.close()
    with pytest.raises(SchemaTooNew, match="upgrade AgentLS"):
        SessionStore(tmp_path / "state.db")


# --- sessions ---------------------------------------------------------------------------------


def test_create_get_and_list_most_recent_first(store: SessionStore) -> None:
    first = store.create_session(backend="openai", model="gpt-x", metadata={"origin": "cli"})
    second = store.create_session(backend="local", model="qwen", mode="automation", title="T")
    assert first.id < second.id and len(first.id) == 26
    got = store.get_session(second.id)
    assert got is not None
    assert (got.backend, got.model, got.mode, got.title) == ("local", "qwen", "automation", "T")
    assert store.get_session(first.id) == first
    assert store.get_session("nope") is None

    assert [s.id for s in store.list_sessions()] == [second.id, first.id]
    store.append(first.id, Message.user("hello"))
    store.append(first.id, Message.assistant("hi"))
    listed = store.list_sessions()
    assert [s.id for s in listed] == [first.id, second.id]
    assert [s.message_count for s in listed] == [2, 0]
    assert listed[0].updated_at > first.updated_at
    assert listed[0].metadata == {"origin": "cli"}
    assert [s.id for s in store.list_sessions(limit=1)] == [first.id]


def test_delete_removes_messages_and_commands(store: SessionStore) -> None:
    kept = store.create_session(backend="b", model="m")
    gone = store.create_session(backend="b", model="m")
    for sid in (kept.id, gone.id):
        store.append(sid, Message.user("q"))
        store.record_command(sid, f"prompt for {sid}")
    assert store.delete_session(gone.id) is True
    assert store.delete_session(gone.id) is False
    assert store.get_session(gone.id) is None
    assert store.history(gone.id) == []
    conn = raw(store.path)
    assert conn.execute(
        "SELECT COUNT(*) FROM messages WHERE session_id = ?", (gone.id,)
    ).fetchone()[0] == 0
    conn.close()
    assert store.commands() == [f"prompt for {kept.id}"]
    assert len(store.history(kept.id)) == 1


def test_appending_to_a_missing_session_says_so(store: SessionStore) -> None:
    with pytest.raises(SessionNotFound, match="does not exist"):
        store.append("missing", Message.user("x"))


# --- messages ---------------------------------------------------------------------------------

EVERY_SHAPE = [
    Message.system("You are AgentLS.\nRules:\n- read before editing"),
    Message.user("Fix the bug in café.py — ünïcödé 🐍 and 中文"),
    Message.assistant(None, [
        ToolCall("call_1", "read_file", '{"path": "caf\\u00e9.py"}'),
        ToolCall("call_2", "search", '{"query": "def main",  "glob": "*.py"}'),
        ToolCall("call_3", "list_dir", ""),
    ]),
    Message.tool("call_1", "1\tprint('hi')\n", name="read_file"),
    Message.tool("call_2", "", name="search"),
    Message.tool("call_3", "error: {not json", name=None),
    Message.assistant("", [ToolCall("call_4", "edit_file", '{"broken": ')]),
    Message.tool("call_4", "arguments are not valid JSON"),
    Message.assistant("Done. 🎉"),
    Message.assistant(""),
    Message.assistant(None),
    Message.user(""),
]


def test_every_message_shape_round_trips_exactly(tmp_path: Path) -> None:
    store = SessionStore.for_workspace(tmp_path)
    sid = store.create_session(backend="b", model="m").id
    ids = [store.append(sid, message) for message in EVERY_SHAPE]
    store.close()

    reopened = SessionStore.for_workspace(tmp_path)
    stored = reopened.history(sid)
    assert [s.id for s in stored] == ids
    assert [s.seq for s in stored] == list(range(1, len(EVERY_SHAPE) + 1))
    for original, back in zip(EVERY_SHAPE, stored, strict=True):
        assert back.message == original
        assert back.message.content == original.content  # None and "" stay distinct
        assert back.message.wire_json() == original.wire_json()
        assert back.kind == "message" and back.session_id == sid
    assert isinstance(stored[2].message.tool_calls, tuple)


def test_text_that_is_not_valid_unicode_is_stored_not_fatal(store: SessionStore) -> None:
    sid = store.create_session(backend="b", model="m").id
    store.append(sid, Message.assistant("bad \ud800 surrogate", [ToolCall("c", "t", '"\udfff"')]))
    back = store.history(sid)[0].message
    assert back.content == "bad ? surrogate"
    assert back.tool_calls[0].arguments == '"?"'


def test_summaries_and_action_messages(store: SessionStore) -> None:
    sid = store.create_session(backend="b", model="m").id
    store.append(sid, Message.user("q"))
    store.append(sid, Message.user("summary of earlier turns"), kind="summary")
    action_id = store.append(
        sid, Message.assistant("edited a.py (+3 −1), ran pytest (exit 0)"), kind="actions",
        metadata={"files": ["a.py"]},
    )
    assert [m.kind for m in store.history(sid)] == ["message", "summary", "actions"]
    assert [m.kind for m in store.history(sid, include_summaries=False)] == ["message", "actions"]

    assert store.update_metadata(action_id, applied=True) is True
    assert store.update_metadata(action_id, applied_at=12.5, api_key="sk-x") is True
    assert store.history(sid)[-1].metadata == {"files": ["a.py"], "applied": True,
                                               "applied_at": 12.5}
    assert store.update_metadata(10_000, applied=True) is False


def test_title_comes_from_the_first_user_message(store: SessionStore) -> None:
    sid = store.create_session(backend="b", model="m").id
    store.append(sid, Message.system("system prompt"))
    store.append(sid, Message.user("   "))
    assert store.get_session(sid).title is None  # type: ignore[union-attr]
    long = "Refactor   the\nparser " + "so that it handles nested blocks " * 4
    store.append(sid, Message.user(long))
    store.append(sid, Message.user("a later question"))
    title = store.get_session(sid).title  # type: ignore[union-attr]
    assert title is not None and len(title) == 60
    assert title.startswith("Refactor the parser so that") and title.endswith("…")

    named = store.create_session(backend="b", model="m", title="Mine").id
    store.append(named, Message.user("something else"))
    assert store.get_session(named).title == "Mine"  # type: ignore[union-attr]


# --- metadata and secrets ---------------------------------------------------------------------


def test_redact_drops_credential_keys_at_any_depth() -> None:
    value = {
        "api_key": "sk-1", "API-KEY": "x", "Authorization-Token": "t", "client_secret": "s",
        "password": "p", "keys": ["a"], "prompt_tokens": 120, "has_token": True,
        "backend": {"name": "openai", "apiKey": "sk-2", "headers": [{"X-Token": "t"}]},
        "model": "m",
    }
    assert redact(value) == {
        "prompt_tokens": 120, "has_token": True,
        "backend": {"name": "openai", "headers": [{}]}, "model": "m",
    }
    assert value["api_key"] == "sk-1"  # the caller's dict is not changed


def test_secrets_never_reach_the_file(store: SessionStore) -> None:
    info = store.create_session(backend="b", model="m",
                                metadata={"OPENAI_API_KEY": "sk-secret-1", "cwd": "/w"})
    assert info.metadata == {"cwd": "/w"}
    store.set_session_metadata(info.id, token="sk-secret-2", usage={"total_tokens": 9})
    store.append(info.id, Message.user("q"), metadata={"password": "sk-secret-3"})
    assert store.set_session_metadata("missing", x=1) is False
    store.close()
    data = b"".join(p.read_bytes() for p in store.path.parent.glob("state.db*"))
    assert b"sk-secret" not in data
    reopened = SessionStore(store.path)
    assert reopened.get_session(info.id).metadata == {  # type: ignore[union-attr]
        "cwd": "/w", "usage": {"total_tokens": 9},
    }


# --- command history --------------------------------------------------------------------------


def test_command_history_oldest_first_with_limit(store: SessionStore) -> None:
    sid = store.create_session(backend="b", model="m").id
    store.record_command(None, "first")
    store.record_command(sid, "second")
    store.record_command(sid, "  ")
    store.record_command(None, "third")
    assert store.commands(10) == ["first", "second", "third"]
    assert store.commands(2) == ["second", "third"]
    assert store.commands(10, session_id=sid) == ["second"]


# --- sharing ----------------------------------------------------------------------------------


def test_two_stores_on_one_file_see_each_other(tmp_path: Path) -> None:
    lsp = SessionStore.for_workspace(tmp_path)
    cli = SessionStore.for_workspace(tmp_path)
    sid = lsp.create_session(backend="b", model="m").id
    lsp.append(sid, Message.user("from the editor"))
    assert [m.message.content for m in cli.history(sid)] == ["from the editor"]
    cli.append(sid, Message.assistant("from the terminal"))
    cli.record_command(sid, "from the terminal")
    assert [(m.seq, m.message.content) for m in lsp.history(sid)] == [
        (1, "from the editor"), (2, "from the terminal"),
    ]
    assert lsp.commands(5) == ["from the terminal"]
    assert [s.id for s in cli.list_sessions()] == [sid]
    lsp.close()
    cli.close()


def test_threads_and_stores_writing_at_once_never_share_a_seq(tmp_path: Path) -> None:
    stores = [SessionStore.for_workspace(tmp_path) for _ in range(2)]
    sid = stores[0].create_session(backend="b", model="m").id
    errors: list[BaseException] = []

    def writer(store: SessionStore, name: str) -> None:
        try:
            for i in range(40):
                store.append(sid, Message.user(f"{name}-{i}"))
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(stores[n % 2], f"t{n}")) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stored = stores[1].history(sid)
    assert [m.seq for m in stored] == list(range(1, 241))
    for n in range(6):  # each writer's messages stay in the order it wrote them
        mine = [m.message.content for m in stored if (m.message.content or "").startswith(f"t{n}-")]
        assert mine == [f"t{n}-{i}" for i in range(40)]
    for store in stores:
        store.close()


def test_a_closed_store_refuses_work(store: SessionStore) -> None:
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.list_sessions()


def test_session_ids_sort_by_creation() -> None:
    ids = [new_session_id() for _ in range(1000)]
    assert ids == sorted(ids) and len(set(ids)) == 1000


# --- surviving a kill -------------------------------------------------------------------------

WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from agentls.engine.sessions.store import SessionStore
    from agentls.llm.messages import Message, ToolCall

    store = SessionStore.for_workspace(Path(sys.argv[1]))
    sid = store.create_session(backend="b", model="m").id
    print(sid, flush=True)
    for i in range(1_000_000):
        if i % 2:
            message = Message.assistant(f"a{i}", [ToolCall(f"c{i}", "read_file", "{}")])
        else:
            message = Message.user(f"u{i}")
        print(store.append(sid, message), i, flush=True)
""")


def test_a_session_survives_sigkill(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    printed: dict[int, int] = {}
    try:
        assert proc.stdout is not None
        sid = proc.stdout.readline().strip()
        while len(printed) < 50:
            line = proc.stdout.readline()
            assert line, f"writer died early: {proc.stderr.read() if proc.stderr else ''}"
            message_id, i = map(int, line.split())
            printed[message_id] = i
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL

    conn = raw(tmp_path / ".agentls" / "state.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    store = SessionStore.for_workspace(tmp_path)
    stored = {m.id: m for m in store.history(sid)}
    assert printed.keys() <= stored.keys()
    for message_id, i in printed.items():
        message = stored[message_id].message
        assert message.content == (f"a{i}" if i % 2 else f"u{i}")
        assert message.tool_calls == ((ToolCall(f"c{i}", "read_file", "{}"),) if i % 2 else ())
    assert [m.seq for m in stored.values()] == list(range(1, len(stored) + 1))
    store.append(sid, Message.user("the session goes on"))
    assert store.history(sid)[-1].seq == len(stored) + 1
    store.close()
