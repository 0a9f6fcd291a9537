"""`agentls run` with tools from MCP servers, configured as a person would in the user config:
real third-party servers from PyPI (mcp-server-time, mcp-server-git) and one written with the
SDK for the failure cases (tests/unit/tools/mcp/faulty_server.py), the scripted model calling
them, sandboxed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from tests.cli.headless_helpers import SECRET, agentls, agentls_on_terminal, call

from agentls.devtools.replay.command import ReplayServer
from agentls.sandbox.bwrap import probe

pytestmark = pytest.mark.skipif(not probe().available, reason="no sandbox here")

BIN = Path(sys.executable).parent
FAULTY = Path(__file__).resolve().parents[1] / "unit" / "tools" / "mcp_client" / "faulty_server.py"


def configure(servers: dict[str, dict[str, Any]]) -> None:
    """Write the person's own config file (the test's XDG_CONFIG_HOME)."""
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "agentls"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(tomli_w.dumps({"mcp": {"servers": servers}}))


def one_call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call(name, "m1", **arguments)]}},
        {"match": {"tool": name}, "reply": {"text": "done"}},
    ]}


def tool_result(server: ReplayServer, call_id: str = "m1") -> dict[str, Any]:
    """The tool result the model got in the request after the call."""
    for request in server.requests:
        for message in request.body.get("messages", []):
            if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                result = json.loads(message["content"])
                assert isinstance(result, dict)
                return result
    raise AssertionError("no request carried the tool result")


def tool_names(server: ReplayServer) -> list[str]:
    return [t["function"]["name"] for t in server.requests[0].body.get("tools", [])]


def run(env: dict[str, str], project: Path, tmp_path: Path, *flags: str
        ) -> subprocess.CompletedProcess[str]:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("what time is it in UTC?\n")
    return agentls("run", str(prompt), "--cwd", str(project), "--dry-run", *flags, env=env)


def test_time_server_tool_is_listed_called_and_its_result_reaches_the_model(
        server: ReplayServer, env: dict[str, str], project: Path, tmp_path: Path) -> None:
    configure({"time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"],
                        "tools": {"get_current_time": "allow"}}})
    env = {**env, "PATH": f"{BIN}:{env['PATH']}"}  # where pip put the server, as for a person
    server.load(one_call("mcp__time__get_current_time", timezone="Europe/Paris"))
    done = run(env, project, tmp_path)
    assert done.returncode == 0, done.stderr
    names = tool_names(server)
    assert "mcp__time__get_current_time" in names and "mcp__time__convert_time" in names
    schema = next(t for t in server.requests[0].body["tools"]
                  if t["function"]["name"] == "mcp__time__get_current_time")["function"]
    assert "(MCP server time, tool get_current_time)" in schema["description"]
    assert "timezone" in schema["parameters"]["properties"]
    result = tool_result(server)
    assert result["ok"] is True and "Europe/Paris" in result["content"]
    # The person sees which server and tool ran, with its arguments.
    assert "→ get_current_time (MCP server time) timezone=Europe/Paris" in done.stderr
    assert "✓ get_current_time (MCP server time): ok" in done.stderr


def test_ask_without_anyone_to_ask_is_refused_and_yes_allows(
        server: ReplayServer, env: dict[str, str], project: Path, tmp_path: Path) -> None:
    configure({"time": {"command": str(BIN / "mcp-server-time")}})  # permission: ask
    server.load(one_call("mcp__time__get_current_time", timezone="UTC"))
    done = run(env, project, tmp_path)
    assert done.returncode == 0, done.stderr
    result = tool_result(server)
    assert result["error"] == "USER_REJECTED" and "needs approval" in result["message"]

    server.load(one_call("mcp__time__get_current_time", timezone="UTC"))
    before = len(server.requests)
    done = run(env, project, tmp_path, "--yes")
    assert done.returncode == 0, done.stderr
    later = ReplayServerView(server, before)
    assert later.result()["ok"] is True


def test_deny_is_honoured_and_the_denied_tool_is_not_offered(
        server: ReplayServer, env: dict[str, str], project: Path, tmp_path: Path) -> None:
    configure({"time": {"command": str(BIN / "mcp-server-time"), "permission": "allow",
                        "tools": {"convert_time": "deny"}}})
    server.load(one_call("mcp__time__convert_time", source_timezone="UTC", time="10:00",
                         target_timezone="Asia/Tokyo"))
    done = run(env, project, tmp_path, "--yes")
    assert done.returncode == 0, done.stderr
    assert "mcp__time__convert_time" not in tool_names(server)
    assert "mcp__time__get_current_time" in tool_names(server)
    assert tool_result(server)["error"] == "UNKNOWN_TOOL"


def test_git_server_reads_the_repository_read_only(
        server: ReplayServer, env: dict[str, str], project: Path, tmp_path: Path) -> None:
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "."], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "first commit"], cwd=project, check=True)
    (project / "README.md").write_text("# calc, changed\n")
    configure({"git": {"command": str(BIN / "mcp-server-git"),
                       "args": ["--repository", str(project)], "permission": "allow"}})
    server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("mcp__git__git_status", "m1", repo_path=str(project)),
            call("mcp__git__git_log", "m2", repo_path=str(project)),
            call("mcp__git__git_add", "m3", repo_path=str(project), files=["README.md"])]}},
        {"match": {"tool": "mcp__git__git_add"}, "reply": {"text": "done"}},
    ]})
    done = run(env, project, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "README.md" in tool_result(server, "m1")["content"]
    assert "first commit" in tool_result(server, "m2")["content"]
    added = tool_result(server, "m3")
    # .git is read-only in the sandbox: the index cannot be written.
    assert added["ok"] is False or "Read-only" in added["content"], added
    status = subprocess.run(["git", "status", "--porcelain"], cwd=project, text=True,
                            capture_output=True, check=True).stdout
    assert status.startswith(" M README.md"), status  # not staged


class _Listener:
    """A TCP port on this machine's loopback, to see whether the server can reach it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


def test_sandbox_no_network_no_key_no_secrets_read_only(
        server: ReplayServer, env: dict[str, str], project: Path, tmp_path: Path) -> None:
    (project / ".env").write_text("TOKEN=planted\n")
    listener = _Listener()
    configure({"faulty": {"command": sys.executable, "args": [str(FAULTY)],
                          "env": {"GREETING": "hello"}, "env_vars": ["SCRIPTED_KEY"],
                          "permission": "allow"}})
    server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("mcp__faulty__connect", "m1", host="127.0.0.1", port=listener.port),
            call("mcp__faulty__env", "m2", variable="SCRIPTED_KEY"),
            call("mcp__faulty__env", "m3", variable="GREETING"),
            call("mcp__faulty__read", "m4", path=str(project / ".env")),
            call("mcp__faulty__write", "m5", path=str(project / "new.txt")),
            call("mcp__faulty__link", "m6", path="/etc/passwd"),
            call("mcp__faulty__sample", "m7"),
            call("mcp__faulty__ask", "m8")]}},
        {"match": {"tool": "mcp__faulty__ask"}, "reply": {"text": "done"}},
    ]})
    done = run(env, project, tmp_path)
    assert done.returncode == 0, done.stderr
    assert tool_result(server, "m1")["content"].startswith("failed:")
    assert listener.accepted == 0
    assert tool_result(server, "m2")["content"] == "<unset>"  # the key, though named
    assert tool_result(server, "m3")["content"] == "hello"
    assert "No such file" in tool_result(server, "m4")["content"]
    assert "Read-only file system" in tool_result(server, "m5")["content"]
    assert not (project / "new.txt").exists()
    linked = tool_result(server, "m6")
    assert "/etc/passwd" in linked["withheld"][0] and "resource link" not in linked["content"]
    assert "does not offer sampling" in tool_result(server, "m7")["message"]
    assert "does not offer elicitation" in tool_result(server, "m8")["message"]
    assert SECRET not in done.stderr + done.stdout


def test_network_true_reaches_the_network(
        server: ReplayServer, env: dict[str, str], project: Path, tmp_path: Path) -> None:
    listener = _Listener()
    configure({"faulty": {"command": sys.executable, "args": [str(FAULTY)], "network": True,
                          "permission": "allow"}})
    server.load(one_call("mcp__faulty__connect", host="127.0.0.1", port=listener.port))
    done = run(env, project, tmp_path)
    assert done.returncode == 0, done.stderr
    assert tool_result(server)["content"] == "connected"


def test_server_that_does_not_start_is_named_and_the_run_goes_on(
        server: ReplayServer, env: dict[str, str], project: Path, tmp_path: Path) -> None:
    configure({"broken": {"command": sys.executable, "args": [str(FAULTY), "exit"]},
               "missing": {"command": "no-such-mcp-server-here"}})
    server.load({"steps": [{"reply": {"text": "no tools needed"}}]})
    done = run(env, project, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "MCP server 'broken' is unavailable this turn" in done.stderr
    assert "cannot open its database" in done.stderr  # its stderr, quoted
    assert "'no-such-mcp-server-here' is not on PATH" in done.stderr
    assert not any(n.startswith("mcp__") for n in tool_names(server))


def _live(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != b"Z":
            found.append(int(entry))
    return found


@pytest.mark.parametrize("sandboxed", [True, False])
def test_kill_9_of_agentls_leaves_no_server_behind(
        server: ReplayServer, env: dict[str, str], project: Path, tmp_path: Path,
        sandboxed: bool) -> None:
    marker = f"marker-{os.getpid()}-{int(sandboxed)}"
    configure({"faulty": {"command": sys.executable, "args": [str(FAULTY), "ok", marker],
                          "sandbox": sandboxed, "permission": "allow"}})
    server.load(one_call("mcp__faulty__sleep", seconds=300))
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("wait\n")
    agent = subprocess.Popen(
        [sys.executable, "-P", "-m", "agentls", "run", str(prompt), "--cwd", str(project), "--yes"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not server.requests or not _live(marker):
            assert time.monotonic() < deadline, "the server never started"
            time.sleep(0.1)
        time.sleep(1.0)  # the call is under way
        assert _live(marker)
    finally:
        agent.send_signal(signal.SIGKILL)
        agent.wait()
    deadline = time.monotonic() + 10
    while _live(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _live(marker) == []


class ReplayServerView:
    """The requests a scripted server received after a point."""

    def __init__(self, server: ReplayServer, start: int) -> None:
        self.server, self.start = server, start

    def result(self, call_id: str = "m1") -> dict[str, Any]:
        for request in self.server.requests[self.start:]:
            for message in request.body.get("messages", []):
                if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                    result = json.loads(message["content"])
                    assert isinstance(result, dict)
                    return result
        raise AssertionError("no later request carried the tool result")


def test_agentls_mcp_lists_servers_state_and_tools(env: dict[str, str], project: Path) -> None:
    configure({"time": {"command": str(BIN / "mcp-server-time"),
                        "tools": {"get_current_time": "allow"}},
               "bad": {"command": sys.executable, "args": [str(FAULTY), "bad-schema"]},
               "gone": {"command": "no-such-mcp-server-here"},
               "off": {"command": "whatever", "enabled": False}})
    done = agentls("mcp", "--cwd", str(project), env=env)
    assert done.returncode == 1, done.stderr  # one enabled server failed
    # piped: name, transport, state, tools, how, tool names, left out, error; one line each
    rows = {line.split("\t")[0]: line.split("\t") for line in done.stdout.splitlines()}
    assert sorted(rows) == ["bad", "gone", "off", "time"] and {len(r) for r in rows.values()} == {8}
    assert rows["time"][1:4] == ["stdio", "running", "2"]
    assert "sandboxed: no network, workspace read-only" in rows["time"][4]
    assert rows["time"][5].split(",") == ["mcp__time__get_current_time (allow)",
                                          "mcp__time__convert_time (ask)"]
    assert rows["bad"][6].startswith("broken: the input schema is not valid")
    assert "'no-such-mcp-server-here' is not on PATH" in rows["gone"][7]
    assert rows["off"][1:3] == ["stdio", "disabled"]
    lines = agentls_on_terminal("mcp", "--cwd", str(project), env=env,
                                columns=160).stdout.splitlines()
    assert lines[0].split()[:4] == ["time", "stdio", "running", "2"]
    assert "    mcp__time__get_current_time (allow)" in lines
    assert any(line.startswith("    left out: broken: the input schema is not valid") for line
               in lines)
    as_json = agentls("mcp", "--json", "--no-start", "--cwd", str(project), env=env)
    servers = {s["name"]: s for s in json.loads(as_json.stdout)["servers"]}
    assert servers["time"]["state"] == "stopped" and servers["off"]["enabled"] is False
