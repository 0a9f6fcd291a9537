"""`agentls acp` driven by the official TypeScript SDK (@agentclientprotocol/sdk, pinned in
tests/acp/node/package.json; `make acp-node` installs it): a client no one on the team wrote,
which parses every message with the protocol's generated schemas before handing it over."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentls.devtools.replay.command import ReplayServer
from agentls.sandbox.bwrap import probe
from tests.acp.acp_helpers import make_project, read_edit_run_steps, scripted_env

NODE_DIR = Path(__file__).parent / "node"
SDK = NODE_DIR / "node_modules" / "@agentclientprotocol" / "sdk"

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(not probe().available, reason="no sandbox here"),
]


def _drive(server: ReplayServer, project: Path, reply: str) -> dict[str, Any]:
    if not SDK.is_dir():
        pytest.fail("the TypeScript ACP SDK is not installed: run `make acp-node`")
    done = subprocess.run(
        ["node", str(NODE_DIR / "drive_agentls.mjs"), sys.executable, str(project), reply],
        capture_output=True, text=True, timeout=120, env=scripted_env(server), check=False)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def test_typescript_client_allows_the_edit(server: ReplayServer, tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    server.load({"models": ["scripted-model", "other-model"], "steps": read_edit_run_steps()})
    report = _drive(server, project, "allow")
    assert report["protocolVersion"] == 1 and report["loadSession"] is True
    assert report["modes"] == ["ask", "edit", "agent"]
    assert "other" in report["models"]
    assert report["stopReason"] == "end_turn"
    # Every session/update on the wire passed the SDK's schema and reached the handler.
    assert report["rawUpdates"] == len(report["updates"]) > 10
    kinds = {u.get("kind") for u in report["updates"] if u["sessionUpdate"] == "tool_call"}
    assert {"read", "edit", "execute"} <= kinds
    diffs = [c for u in report["updates"] if u["sessionUpdate"] == "tool_call_update"
             for c in u.get("content") or [] if c["type"] == "diff"]
    assert {Path(d["path"]).name for d in diffs} == {"calc.py", "util.py"}
    assert len(report["permissions"]) == 1
    assert [Path(p).name for p in report["writes"]] == ["calc.py", "util.py"]
    assert (project / "src" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert server.requests[0].body["model"] == "other-model"  # set through set_config_option
    assert report["unknownSession"]["code"] == -32602
    assert "no session 'nope'" in json.dumps(report["unknownSession"])


def test_typescript_client_rejects_the_edit(server: ReplayServer, tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    server.load({"models": ["scripted-model", "other-model"], "steps": read_edit_run_steps()})
    report = _drive(server, project, "reject")
    assert report["writes"] == []
    assert (project / "src" / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert (project / "src" / "util.py").read_text() == "def double(x):\n    return x + x\n"


def test_typescript_client_cancels_then_lists_and_loads(server: ReplayServer,
                                                        tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    server.load({"steps": [{"reply": {"text": "word " * 300, "chunk_size": 5,
                                      "delay_s": 0.02}}]})
    report = _drive(server, project, "cancel")
    assert report["stopReason"] == "cancelled"
    assert report["rawUpdates"] == len(report["updates"])  # all passed the SDK's schema
    assert report["listed"] is True
    # The stored session replays its request, the answer as far as it came, and the note
    # that it was cancelled there.
    assert report["replayed"][0] == "user_message_chunk"
    assert report["replayed"][-2:] == ["agent_message_chunk", "agent_thought_chunk"]


def test_typescript_client_runs_the_sandboxed_command_in_its_terminal(
        server: ReplayServer, tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    server.load({"models": ["scripted-model", "other-model"], "steps": read_edit_run_steps()})
    report = _drive(server, project, "terminal")
    assert report["stopReason"] == "end_turn"
    assert report["rawUpdates"] == len(report["updates"])  # all passed the SDK's schema
    [terminal] = report["terminals"]
    # The engine's own command line: the memory limit, then bubblewrap, then the command.
    assert terminal["argv"][:2] == ["/bin/sh", "-c"] and "--unshare-net" in terminal["argv"]
    assert terminal["argv"][-1] == "grep -c 'a + b' src/calc.py"
    assert terminal["cwd"] == str(project) and terminal["released"]
    assert terminal["exit"] == {"exitCode": 0, "signal": None} and not terminal["killed"]
    shown = [c for u in report["updates"] if u["sessionUpdate"] == "tool_call_update"
             and u["toolCallId"] == "c4" for c in u.get("content") or []]
    assert {"type": "terminal", "terminalId": "term-1"} in shown
    told = [m for m in server.requests[-1].body["messages"] if m.get("tool_call_id") == "c4"]
    assert json.loads(told[0]["content"])["stdout"].startswith("1\n")  # saw the pending edit
