"""`agentls run --backend codex` against the real OpenAI Codex CLI (npm @openai/codex, pinned in
tests/agent_clis, installed by `make agent-clis`), offline: codex's own config points a model
provider at the scripted model server (not a model), which speaks the Responses API codex
requires (wire_api = "responses").

What this proves of the adapter (llm/agent_cli/backends.py, llm/agent_cli/parse_output.py): the
command
line
the real binary accepts, the parse of what it prints (`codex exec --json`: agent messages,
command executions, turn usage, errors), the files it writes itself reported from git (the
ChangeSet is not used: codex writes the workspace, so `--dry-run` is refused), its exit
codes mapped to ours (auth -> 2, a failed turn -> 1, our timeout -> 75), and that a stopped
run leaves no codex process behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.cli.headless_helpers import SECRET, agentls, last_json, write

from agentls.devtools.replay.command import ReplayServer

CODEX_BIN = Path(__file__).resolve().parents[1] / "agent_clis" / "node_modules" / ".bin"
CODEX_KEY = "sk-scripted-codex-key-0123456789"
VERSION = "0.169.0"  # tests/agent_clis/package.json


@pytest.fixture(scope="module")
def codex() -> Path:
    binary = CODEX_BIN / "codex"
    if not binary.exists():
        pytest.fail("the Codex CLI is not installed: run `make agent-clis`")
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                             check=True, timeout=30).stdout
    assert version.split()[-1] == VERSION, version
    return binary


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    write(root / "calc.py", "def add(a, b):\n    return a - b\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], cwd=root, check=True)
    return root


def codex_env(server: ReplayServer, tmp_path: Path) -> dict[str, str]:
    """A person's setup: codex's config names a provider at the scripted server, its key in
    CODEX_API_KEY; AgentLS's own key (OPENAI_API_KEY) must not reach codex."""
    home = tmp_path / "codex-home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(
        'model = "scripted-model"\nmodel_provider = "scripted"\n'
        "[model_providers.scripted]\n"
        f'name = "scripted (not a model)"\nbase_url = "{server.base_url}"\n'
        'env_key = "CODEX_API_KEY"\nwire_api = "responses"\n')
    return {**os.environ, "PATH": f"{CODEX_BIN}{os.pathsep}{os.environ['PATH']}",
            "CODEX_HOME": str(home), "HOME": str(home), "CODEX_API_KEY": CODEX_KEY,
            "OPENAI_API_KEY": SECRET}


def exec_command(call_id: str, cmd: str) -> dict[str, Any]:
    return {"id": call_id, "name": "exec_command", "arguments": {"cmd": cmd}}


def test_codex_writes_files_itself_and_agentls_reports_them(
        codex: Path, server: ReplayServer, repo: Path, tmp_path: Path) -> None:
    server.load({"api_key": CODEX_KEY, "models": "*", "steps": [
        {"match": {"tool_results": False}, "reply": {"text": "Fixing add.", "tool_calls": [
            exec_command("c1", "sed -i 's/a - b/a + b/' calc.py && printf 'fixed\\n' > "
                               "NOTES.md && cat calc.py")]}},
        {"match": {"tool_results": True}, "reply": {"text": "Fixed add() in calc.py."}},
    ]})
    prompt = write(tmp_path / "p.txt", "fix add")
    done = agentls("run", str(prompt), "--backend", "codex", "--cwd", str(repo), "--json",
                   env=codex_env(server, tmp_path))
    assert done.returncode == 0, done.stderr
    result = last_json(done.stdout)
    assert result["backend"] == "codex" and result["stopReason"] == "done"
    assert "Fixing add." in result["text"] and "Fixed add() in calc.py." in result["text"]
    assert {c["path"]: c["status"] for c in result["changes"]} == {
        "NOTES.md": "added", "calc.py": "modified"}
    assert result["applied"] is True and "wrote these changes itself" in result["changesNote"]
    assert (repo / "calc.py").read_text().endswith("a + b\n")
    # The usage codex printed in turn.completed, parsed.
    assert result["usage"]["promptTokens"] > 1000 and result["usage"]["completionTokens"] > 0
    # Codex ran the command and sent its output back: the second request carries it.
    assert [r.path for r in server.requests] == ["/v1/responses", "/v1/responses"]
    outputs = [i for i in server.requests[1].body["input"]
               if i.get("type") == "function_call_output"]
    assert outputs[0]["call_id"] == "c1" and "return a + b" in outputs[0]["output"]
    recorded = json.dumps([r.body for r in server.requests]) + json.dumps(
        [r.headers for r in server.requests])
    assert SECRET not in recorded  # AgentLS's key never reached codex


def test_dry_run_is_refused_because_codex_writes_itself(
        codex: Path, server: ReplayServer, repo: Path, tmp_path: Path) -> None:
    prompt = write(tmp_path / "p.txt", "fix add")
    dry = agentls("run", str(prompt), "--backend", "codex", "--dry-run", "--cwd", str(repo),
                  env=codex_env(server, tmp_path))
    assert dry.returncode == 64 and "edits files itself" in dry.stderr
    assert server.requests == []


def test_a_rejected_key_is_exit_2(codex: Path, server: ReplayServer, repo: Path,
                                  tmp_path: Path) -> None:
    server.load({"api_key": "sk-another-key-0123456789", "models": "*",
                 "steps": [{"reply": {"text": "never"}}]})
    prompt = write(tmp_path / "p.txt", "fix add")
    done = agentls("run", str(prompt), "--backend", "codex", "--cwd", str(repo),
                   env=codex_env(server, tmp_path))
    assert done.returncode == 2, done.stderr
    assert "Incorrect API key" in done.stderr or "401" in done.stderr


def test_a_failed_turn_is_exit_1_with_the_servers_message(
        codex: Path, server: ReplayServer, repo: Path, tmp_path: Path) -> None:
    server.load({"models": "*", "steps": [{"error": {
        "status": 400, "body": {"error": {"message": "context too long for scripted-model",
                                          "type": "invalid_request_error"}}}}]})
    prompt = write(tmp_path / "p.txt", "fix add")
    done = agentls("run", str(prompt), "--backend", "codex", "--cwd", str(repo),
                   env=codex_env(server, tmp_path))
    assert done.returncode == 1, done.stderr
    assert "context too long for scripted-model" in done.stderr


def _codex_processes_in(folder: Path) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/cwd") != str(folder):
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if b"codex" in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("how", ["timeout", "interrupt"])
def test_a_stopped_run_stops_codex(codex: Path, server: ReplayServer, repo: Path,
                                   tmp_path: Path, how: str) -> None:
    server.load({"models": "*", "steps": [{"reply": {"text": "late", "first_delay_s": 60}}]})
    prompt = write(tmp_path / "p.txt", "fix add")
    env = codex_env(server, tmp_path)
    if how == "timeout":
        env["AGENTLS_TIMEOUT_MS"] = "4000"
    agent = subprocess.Popen(
        [sys.executable, "-P", "-m", "agentls", "run", str(prompt), "--backend", "codex", "--cwd",
         str(repo)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not server.requests:  # codex is waiting for the model
            assert time.monotonic() < deadline and agent.poll() is None, agent.stderr
            time.sleep(0.1)
        assert _codex_processes_in(repo)
        if how == "interrupt":
            agent.send_signal(signal.SIGINT)
        _, stderr = agent.communicate(timeout=30)
    finally:
        if agent.poll() is None:
            agent.kill()
    assert agent.returncode == (75 if how == "timeout" else 130), stderr
    deadline = time.monotonic() + 10
    while _codex_processes_in(repo) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _codex_processes_in(repo) == []
