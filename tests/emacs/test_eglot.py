"""A real plugin-less LSP editor: Emacs 28 + eglot 1.9 (Debian's emacs-nox and elpa-eglot,
installed by ``make emacs-eglot``) in batch mode, set up as docs/EDITORS.md says, against the real
``agentls serve`` over stdio and the scripted model (agentls.devtools.replay.command, not a real
model). eglot_session.el is what the person does; this test judges its report, the file on
disk and the server's log.

eglot keeps its request timeout (jsonrpc's 10 s); the scripted chat takes 11 s before its
first token, so a command held for the run would fail with "Timed out".
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agentls.devtools.replay.command import ReplayServer
from tests.emacs.conftest import (
    SESSION,
    assert_both_edits_landed,
    emacs_with_eglot,
    scripted_options,
    session_env,
)

REQUEST_TIMEOUT_S = 10  # jsonrpc-default-request-timeout, as eglot uses it
CHAT_FIRST_TOKEN_S = REQUEST_TIMEOUT_S + 1.0
CALC = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
DOCUMENTED = 'def add(a, b):\n    """Return the sum of a and b."""\n    return a + b\n'


def edit(call_id: str, search: str, replace: str) -> dict[str, Any]:
    return {"id": call_id, "name": "edit_file",
            "arguments": {"path": "calc.py", "edits": [{"search": search, "replace": replace}]}}


SCRIPT = {"steps": [
    # The Fix code action (its prompt names the diagnostic).
    {"match": {"user": "add() subtracts", "tool_results": False},
     "reply": {"tool_calls": [edit("fix", "    return a - b", "    return a + b")]}},
    {"match": {"user": "add() subtracts", "tool_results": True},
     "reply": {"text": "add() now adds."}},
    # The chat, slower than the client's request timeout.
    {"match": {"user": "docstring", "tool_results": False},
     "reply": {"first_delay_s": CHAT_FIRST_TOKEN_S, "tool_calls": [edit(
         "doc", "def add(a, b):\n", 'def add(a, b):\n    """Return the sum of a and b."""\n')]}},
    {"match": {"user": "docstring", "tool_results": True},
     "reply": {"text": "Added a docstring to add()."}},
]}


def test_eglot_fixes_and_chats_without_a_plugin(tmp_path: Path) -> None:
    emacs = emacs_with_eglot()
    project = tmp_path / "project"
    project.mkdir()
    (project / "calc.py").write_text(CALC)
    log = tmp_path / "server.log"
    report = tmp_path / "report.json"
    with ReplayServer(SCRIPT) as model:
        env = session_env(
            tmp_path,
            server=json.dumps([sys.executable, "-P", "-m", "agentls", "serve",
                               "--log-file", str(log)]),
            options=json.dumps(scripted_options(model.base_url)),
            file=str(project / "calc.py"), out=str(report))
        started = time.monotonic()
        done = subprocess.run([emacs, "--batch", "-l", str(SESSION)], env=env, cwd=project,
                              capture_output=True, text=True, timeout=180)
        took = time.monotonic() - started
        remaining = model.remaining_steps()
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert took > CHAT_FIRST_TOKEN_S  # the chat really ran longer than the request timeout
    result = json.loads(report.read_text())
    print(f"Emacs {result.get('emacs')}, eglot {result.get('eglot')}: {took:.1f} s")
    print("\n".join(result["steps"]))

    assert result["requestTimeout"] == REQUEST_TIMEOUT_S  # eglot's own, untouched
    assert result["errors"] == [], (result, output)
    assert "Timed out" not in output and "timed out" not in output, output
    assert any(t.startswith("AgentLS: Fix 'add() subtracts'") for t in result["menu"])
    returned = [s for s in result["steps"] if "returned after" in s]
    assert len(returned) == 2 and all(float(s.split("after ")[1].split(" s")[0]) < 1.0
                                      for s in returned), returned
    # The buffer eglot edited and the file the person saved hold both changes, recorded
    # applied: never "not applied" for what landed.
    assert_both_edits_landed(result, project / "calc.py", DOCUMENTED,
                             "Added a docstring to add().", remaining, log)
