"""Sandboxed commands in the ACP client's terminal: `agentls acp` driven by the SDK's Python
client, whose terminal methods really run what they are given, against the scripted model
(not a real model). The client runs the engine's own bubblewrap command line; the sandbox
holds (no secrets, no network, writes only as a diff); timeout and cancel kill it; a client
whose terminal fails gets the engine's own run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import acp
from agentls.devtools.replay.command import ReplayServer
from agentls.sandbox.bwrap import probe
from tests.acp.acp_helpers import (
    SECRET,
    RecordingClient,
    call,
    cancelled_once,
    initialized,
    make_project,
    scripted_env,
    spawned,
)

pytestmark = pytest.mark.skipif(not probe().available, reason="no sandbox here")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


def _steps(command: str, timeout: float = 30) -> list[dict[str, Any]]:
    """Edit calc.py, run ``command``, answer."""
    return [
        {"match": {"tool_results": False}, "reply": {"text": "I am a scripted model.",
                                                     "tool_calls": [
            call("edit_file", "c1", path="src/calc.py",
                 edits=[{"search": "return a - b", "replace": "return a + b"}])]}},
        {"match": {"tool": "edit_file"}, "reply": {"tool_calls": [
            call("shell_exec", "c2", command=command, timeout=timeout)]}},
        {"match": {"tool": "shell_exec"}, "reply": {"text": "Done."}},
    ]


def _shell_result(server: ReplayServer) -> dict[str, Any]:
    """What the model was told of its command."""
    messages = server.requests[-1].body["messages"]
    return json.loads(next(m["content"] for m in messages
                           if m["role"] == "tool" and m.get("tool_call_id") == "c2"))


async def _turn(server: ReplayServer, project: Path, client: RecordingClient) -> Any:
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        return await conn.prompt(session_id=session.session_id,
                                 prompt=[acp.text_block("fix add")])


async def test_the_command_runs_in_the_clients_terminal_inside_the_sandbox(
        server: ReplayServer, project: Path) -> None:
    command = ("grep -c 'a + b' src/calc.py; echo \"key=[$SCRIPTED_KEY]\"; echo made > made.txt; "
               "echo oops >&2; exit 3")
    server.load({"steps": _steps(command)})
    client = RecordingClient(permission="reject_all", terminal=True)
    answer = await _turn(server, project, client)
    assert answer.stop_reason == "end_turn"
    (terminal_id, terminal), = client.terminals.items()
    # The client was given the engine's own command line: sh setting the memory limit, then
    # bubblewrap with no network over the shadow workspace, started in the project.
    assert terminal.argv[:2] == ["/bin/sh", "-c"] and "ulimit -v" in terminal.argv[2]
    assert any(part.endswith("bwrap") for part in terminal.argv)
    assert "--unshare-net" in terminal.argv and "--clearenv" in terminal.argv
    assert terminal.argv[-3:] == [terminal.argv[-3], "-c", command]
    assert terminal.cwd == str(project)
    assert terminal.released and not terminal.killed
    # The call shows the terminal live, and again when it ends, with how it ended.
    updates = [u for u in client.of("tool_call_update") if u.tool_call_id == "c2"]
    assert updates[0].status == "in_progress"
    assert [(c.type, c.terminal_id) for c in updates[0].content] == [("terminal", terminal_id)]
    assert updates[-1].content[0].type == "terminal"
    assert updates[-1].content[0].terminal_id == terminal_id
    assert updates[-1].status == "completed"
    # The model got the output the engine would have given it (stderr in the same text).
    result = _shell_result(server)
    assert result["exit_code"] == 3
    assert result["stdout"].split("\n")[:3] == ["1", "key=[]", "oops"]  # saw the pending edit
    assert any("editor's terminal" in note for note in result["notes"])
    assert result["sandbox"].startswith("sandboxed")
    # The command's write joined the review (rejected here), never the disk directly.
    review, _options = client.permissions[-1]
    assert str(project / "made.txt") in {d.path for d in review.content if d.type == "diff"}
    assert not (project / "made.txt").exists()
    assert SECRET not in str([n.model_dump() for n in client.updates])


async def test_a_command_past_its_timeout_is_killed_through_the_terminal(
        server: ReplayServer, project: Path) -> None:
    server.load({"steps": _steps("echo started; sleep 30", timeout=1)})
    client = RecordingClient(permission="reject_all", terminal=True)
    answer = await _turn(server, project, client)
    assert answer.stop_reason == "end_turn"
    (_, terminal), = client.terminals.items()
    assert terminal.killed and terminal.released
    result = _shell_result(server)
    assert result["error"] == "TIMEOUT" and result["timed_out"] is True
    assert result["stdout"].startswith("started")
    final = [u for u in client.of("tool_call_update") if u.tool_call_id == "c2"][-1]
    assert final.status == "failed" and final.content[0].type == "terminal"


async def test_cancel_kills_the_command_in_the_terminal(
        server: ReplayServer, project: Path) -> None:
    server.load({"steps": _steps("sleep 60", timeout=120)})
    client = RecordingClient(permission="reject_all", terminal=True)
    answer = await cancelled_once(server, project, client, "fix add", client.terminal_started,
                                  answer_within=15)
    assert answer.stop_reason == "cancelled"
    (_, terminal), = client.terminals.items()
    assert terminal.killed and terminal.released
    assert terminal.process is not None and terminal.process.returncode is not None


async def test_a_failing_terminal_falls_back_to_the_engines_own_sandbox(
        server: ReplayServer, project: Path) -> None:
    server.load({"steps": _steps("grep -c 'a + b' src/calc.py")})
    client = RecordingClient(permission="reject_all", terminal=True, terminal_fails=True)
    answer = await _turn(server, project, client)
    assert answer.stop_reason == "end_turn"
    assert client.terminals == {}
    result = _shell_result(server)
    assert result["exit_code"] == 0 and result["stdout"] == "1\n"
    assert result["sandbox"].startswith("sandboxed")
    final = [u for u in client.of("tool_call_update") if u.tool_call_id == "c2"][-1]
    assert final.content[0].content.text == "1\n[exit code 0]"
