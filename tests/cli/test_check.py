"""`agentls run` checks its own work with the project's language server (real basedpyright,
sandboxed): a scripted model's type error is told to it before the turn ends, its fix lands
in the same change, and `--json` carries the check."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.cli.headless_helpers import agentls, last_json, write

from agentls.devtools.replay.command import ReplayServer
from agentls.sandbox.bwrap import probe

BROKEN = "count: int = greet('x')"
FIXED = "count: str = greet('x')"


def _edit(call_id: str, search: str, replace: str) -> dict[str, Any]:
    return {"id": call_id, "name": "edit_file", "arguments": {
        "path": "app.py", "edits": [{"search": search, "replace": replace}]}}


def steps() -> list[dict[str, Any]]:
    return [
        {"name": "break", "match": {"user": "add a count", "tool_results": False},
         "reply": {"text": "Adding it.", "tool_calls": [
             _edit("c1", "print(greet('x'))", f"{BROKEN}\nprint(count)")]}},
        {"name": "done-too-soon", "match": {"user": "add a count", "tool": "edit_file"},
         "reply": {"text": "Added count."}},
        {"name": "fix", "match": {"user": "AgentLS check",
                                  "tool_results": False},
         "reply": {"text": "My annotation was wrong.", "tool_calls": [
             _edit("c2", BROKEN, FIXED)]}},
        {"name": "done", "match": {"user": "AgentLS check", "tool": "edit_file"},
         "reply": {"text": "Fixed the annotation."}},
    ]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    write(root / "pyproject.toml", "[project]\nname = 'demo'\n")
    write(root / "lib.py", "def greet(name: str) -> str:\n    return 'hi ' + name\n")
    write(root / "app.py", "from lib import greet\n\nprint(greet('x'))\n")
    return root


def _env(server: ReplayServer, env: dict[str, str]) -> dict[str, str]:
    found = os.path.join(os.path.dirname(sys.executable), "basedpyright-langserver")
    if not os.access(found, os.X_OK):
        pytest.skip("basedpyright is not installed (the dev extra has it)")
    if not probe().available:
        pytest.skip(f"no sandbox here: {probe().describe()}")
    return {**env, "AGENTLS_LSP__DETECT": "false",
            "AGENTLS_LSP__SERVERS__BASEDPYRIGHT__COMMAND": found,
            "AGENTLS_LSP__SERVERS__BASEDPYRIGHT__STARTUP_TIMEOUT_S": "60",
            "AGENTLS_AGENT__CHECK_TIMEOUT_S": "60"}


def test_a_type_error_is_told_before_the_turn_ends_and_the_fix_lands_in_the_same_change(
        server: ReplayServer, env: dict[str, str], project: Path) -> None:
    server.load({"steps": steps()})
    done = agentls("run", "Please add a count to app.py", "--cwd", str(project), "--json",
                   env=_env(server, env))
    assert done.returncode == 0, done.stderr
    body = last_json(done.stdout)
    assert (project / "app.py").read_text() == (
        f"from lib import greet\n\n{FIXED}\nprint(count)\n")
    assert [c["path"] for c in body["changes"]] == ["app.py"]  # one change, the fix in it
    check = body["check"]
    assert check["status"] == "clean", check
    assert check["summary"].startswith("no new errors") and check["files"] == ["app.py"]
    # The model was told the problem, in the request after its first "done".
    bodies = [r.body for r in server.requests if r.path == "/v1/chat/completions"]
    told = [m for b in bodies for m in b["messages"]
            if m["role"] == "user" and "[AgentLS check]" in str(m["content"])]
    assert told and "app.py:3:14 error (new)" in told[0]["content"]
    assert BROKEN in told[0]["content"] and server.remaining_steps() == []
    # The tools were offered: a server covers the workspace.
    tools = {t["function"]["name"] for t in bodies[0]["tools"]}
    assert {"diagnostics", "definition", "references", "workspace_symbols", "hover"} <= tools


def test_when_no_server_covers_the_workspace_the_tools_are_not_offered(
        server: ReplayServer, env: dict[str, str], project: Path) -> None:
    server.load({"steps": [{"match": {"user": "hello"}, "reply": {"text": "hi"}}]})
    done = agentls("run", "Please say hello", "--cwd", str(project), "--json",
                   env={**env, "AGENTLS_LSP__DETECT": "false"})
    assert done.returncode == 0, done.stderr
    [body] = [r.body for r in server.requests if r.path == "/v1/chat/completions"]
    tools = {t["function"]["name"] for t in body["tools"]}
    assert "diagnostics" not in tools and "definition" not in tools
    assert last_json(done.stdout)["check"] is None


def test_a_server_that_cannot_start_never_blocks_the_turn_and_the_summary_says_why(
        server: ReplayServer, env: dict[str, str], project: Path) -> None:
    server.load({"steps": steps()[:2]})
    done = agentls("run", "Please add a count to app.py", "--cwd", str(project), "--json",
                   env={**env, "AGENTLS_LSP__DETECT": "false",
                        "AGENTLS_LSP__SERVERS__PY__COMMAND": "no-such-pyright",
                        "AGENTLS_LSP__SERVERS__PY__LANGUAGES": '["python"]'})
    assert done.returncode == 0, done.stderr
    check = last_json(done.stdout)["check"]
    assert check["status"] == "failed"
    assert "could not run" in check["summary"] and "'no-such-pyright' is not on PATH" in \
        check["summary"]
    assert "check" in done.stderr  # the person saw it in the transcript too
