"""`agentls sessions` and `agentls sessions show ID`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.headless_helpers import agentls, agentls_on_terminal, last_json, make_project, write

from agentls.devtools.replay.command import ReplayServer
from agentls.engine.sessions.store import SessionStore


def test_no_sessions_creates_nothing(env: dict[str, str], tmp_path: Path) -> None:
    listed = agentls("sessions", "--json", "--cwd", str(tmp_path), env=env)
    assert listed.returncode == 0
    assert json.loads(listed.stdout)["sessions"] == []
    plain = agentls("-C", str(tmp_path), "sessions", env=env)
    assert plain.returncode == 0 and "no sessions" in plain.stderr
    assert not (tmp_path / ".agentls").exists()


def test_list_and_show_a_run_session(server: ReplayServer, env: dict[str, str],
                                     tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    server.load({"steps": [{"reply": {"text": "Hello from the scripted model."}}]})
    prompt = write(tmp_path / "p.txt", "Say hello to the calc project\n")
    ran = agentls("run", str(prompt), "--cwd", str(project), "--json", env=env)
    assert ran.returncode == 0, ran.stderr
    session_id = last_json(ran.stdout)["sessionId"]

    listed = json.loads(agentls("sessions", "--json", "--cwd", str(project), env=env).stdout)
    assert [s["id"] for s in listed["sessions"]] == [session_id]
    session = listed["sessions"][0]
    assert session["title"] == "Say hello to the calc project"
    assert session["backend"] == "scripted" and session["mode"] == "automation"
    assert session["messages"] == 2 and session["metadata"] == {"source": "agentls run"}

    plain = agentls("sessions", "--cwd", str(project), env=env)
    assert session_id in plain.stdout and "Say hello" in plain.stdout

    shown = agentls("sessions", "show", session_id[:20], "--cwd", str(project), env=env)
    assert shown.returncode == 0, shown.stderr
    assert "#1 user" in shown.stdout and "Hello from the scripted model." in shown.stdout

    as_json = json.loads(agentls("sessions", "show", session_id, "--json", "--cwd",
                                 str(project), env=env).stdout)
    assert [m["role"] for m in as_json["messages"]] == ["user", "assistant"]
    assert as_json["session"]["id"] == session_id


def test_show_unknown_session_exit_64(server: ReplayServer, env: dict[str, str],
                                      tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    server.load({"steps": [{"reply": {"text": "hi"}}]})
    prompt = write(tmp_path / "p.txt", "hi")
    assert agentls("run", str(prompt), "--cwd", str(project), env=env).returncode == 0
    missing = agentls("sessions", "show", "NOSUCHSESSION", "--cwd", str(project), env=env)
    assert missing.returncode == 64 and "agentls sessions" in missing.stderr


def test_run_continues_a_session(server: ReplayServer, env: dict[str, str],
                                 tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    server.load({"steps": [{"match": {"user": "first"}, "reply": {"text": "one"}},
                           {"match": {"user": "second"}, "reply": {"text": "two"}}]})
    first = agentls("run", "-", "--cwd", str(project), "--json", env=env, stdin="first")
    session_id = last_json(first.stdout)["sessionId"]
    second = agentls("run", "-", "--cwd", str(project), "--json", "--session", session_id,
                     env=env, stdin="second")
    assert second.returncode == 0, second.stderr
    assert last_json(second.stdout)["sessionId"] == session_id
    history = [m["content"] for m in server.requests[1].body["messages"]
               if m["role"] != "system"]
    assert history == ["first", "one", "second"]
    unknown = agentls("run", "-", "--cwd", str(project), "--session", "NOPE", env=env,
                      stdin="third")
    assert unknown.returncode == 64 and "agentls sessions" in unknown.stderr


def test_damaged_store_is_reported_without_a_traceback(env: dict[str, str],
                                                      tmp_path: Path) -> None:
    (tmp_path / ".agentls").mkdir()
    (tmp_path / ".agentls" / "state.db").write_bytes(b"not a database " * 100)
    for args in (["sessions"], ["sessions", "show", "01"]):
        done = agentls(*args, "--cwd", str(tmp_path), env=env)
        assert done.returncode == 73, done.stderr
        assert "move it aside" in done.stderr and "Traceback" not in done.stderr


def test_limit_must_be_above_zero(env: dict[str, str], tmp_path: Path) -> None:
    done = agentls("sessions", "--limit", "0", "--cwd", str(tmp_path), env=env)
    assert done.returncode == 64 and "above 0" in done.stderr


def test_an_ambiguous_prefix_asks_for_more_of_the_id(env: dict[str, str],
                                                     tmp_path: Path) -> None:
    with SessionStore.for_workspace(tmp_path) as store:
        ids = [store.create_session(backend="b", model="m").id for _ in range(2)]
    common = next(i for i in range(len(ids[0])) if ids[0][i] != ids[1][i])
    done = agentls("sessions", "show", ids[0][:common], "--cwd", str(tmp_path), env=env)
    assert done.returncode == 64 and "2 sessions" in done.stderr
    shown = agentls("sessions", "show", ids[0][:common + 1], "--json", "--cwd", str(tmp_path),
                    env=env)
    assert shown.returncode == 0 and json.loads(shown.stdout)["session"]["id"] == ids[0]
    ran = agentls("run", "-", "--cwd", str(tmp_path), "--session", ids[0][:common], env=env,
                  stdin="continue")
    assert ran.returncode == 64 and "2 sessions" in ran.stderr


def test_tables_fit_80_columns(server: ReplayServer, env: dict[str, str], project: Path) -> None:
    server.load({"steps": [{"reply": {"text": "ok"}}]})
    long_prompt = "Please look at every module of this project and explain " * 4
    ran = agentls("run", long_prompt, "--cwd", str(project), "--json", env=env)
    assert ran.returncode == 0, ran.stderr
    for command in (("sessions",), ("config", "list")):
        shown = agentls_on_terminal("-C", str(project), *command, env=env, columns=80)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.strip()
        assert max(len(line) for line in shown.stdout.splitlines()) <= 80, shown.stdout
    listed = agentls_on_terminal("sessions", "--cwd", str(project), env=env).stdout
    assert "…" in listed  # the long title is shortened, not wrapped over many lines
