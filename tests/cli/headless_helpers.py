"""Helpers for the `agentls run` / `agentls loop` / `agentls sessions` subprocess tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentls.devtools.replay.command import ReplayServer

SECRET = "sk-headless-planted-secret-0123456789"


def agentls(*args: str, env: dict[str, str], stdin: str | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # start_new_session: no controlling terminal, so nobody can be prompted on /dev/tty.
    return subprocess.run([sys.executable, "-P", "-m", "agentls", *args], capture_output=True,
                          text=True, env=env, input=stdin, check=False, timeout=60, cwd=cwd,
                          start_new_session=True,
                          stdin=None if stdin is not None else subprocess.DEVNULL)


def agentls_on_terminal(*args: str, env: dict[str, str], cwd: Path | None = None,
                        columns: int = 80) -> subprocess.CompletedProcess[str]:
    """``agentls`` with its standard output on a pseudo-terminal ``columns`` wide (what a
    person sees: the drawn tables); stderr is captured apart."""
    import pty
    import threading

    leader, follower = pty.openpty()
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        done = subprocess.run([sys.executable, "-P", "-m", "agentls", *args], stdout=follower,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                              env={**env, "COLUMNS": str(columns), "TERM": "dumb"},
                              check=False, timeout=60, cwd=cwd, start_new_session=True)
    finally:
        os.close(follower)
    reader.join(10)
    os.close(leader)
    out = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return subprocess.CompletedProcess(done.args, done.returncode, out, done.stderr)


def scripted_env(server: ReplayServer) -> dict[str, str]:
    """An environment whose active backend is the scripted model server, with a key."""
    return {
        **os.environ,
        "AGENTLS_BACKENDS__SCRIPTED__BASE_URL": server.base_url,
        "AGENTLS_BACKENDS__SCRIPTED__MODEL": "scripted-model",
        "AGENTLS_BACKENDS__SCRIPTED__API_KEY_ENV": "SCRIPTED_KEY",
        "AGENTLS_BACKEND": "scripted",
        "AGENTLS_RETRY__BASE_DELAY_S": "0.01",
        "AGENTLS_RETRY__MAX_RETRIES": "1",
        "AGENTLS_CACHE__ENABLED": "false",
        "SCRIPTED_KEY": SECRET,
    }


def make_project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "README.md").write_text("# calc\n")
    return root


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def fix_add_steps(final_text: str = "Fixed add.") -> list[dict[str, Any]]:
    """Read calc.py, edit it, then answer: the model side of a small, successful run."""
    return [
        {"match": {"tool_results": False}, "reply": {"text": "Looking.", "tool_calls": [
            call("read_file", "c1", path="src/calc.py")]}},
        {"match": {"tool": "read_file"}, "reply": {"tool_calls": [
            call("edit_file", "c2", path="src/calc.py",
                 edits=[{"search": "return a - b", "replace": "return a + b"}])]}},
        {"match": {"tool": "edit_file"}, "reply": {"text": final_text}},
    ]


def last_json(stdout: str) -> dict[str, Any]:
    """The --json object: the whole of stdout must be exactly one JSON value."""
    value = json.loads(stdout)
    assert isinstance(value, dict)
    return value


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
