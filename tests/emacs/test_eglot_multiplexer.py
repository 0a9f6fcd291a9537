"""eglot runs one server per buffer and sends only that server's diagnostics with
``textDocument/codeAction``; AgentLS publishes none. Behind the LSP multiplexer
rassumfrassum (``rass``, by eglot's author), eglot talks to ``ruff server`` and
``agentls serve`` at once, as docs/EDITORS.md's eglot recipe sets it up: flymake shows ruff's
diagnostic, eglot's code action menu offers "AgentLS: Fix …" for it, and ``agentls.chat``
reaches AgentLS through rass as well. Real Emacs 28 +
eglot 1.9, real rass, real ruff, real ``agentls serve``; the model is the scripted one
(agentls.devtools.replay.command, not a real model).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentls.devtools.replay.command import ReplayServer
from tests.emacs.conftest import (
    SESSION,
    assert_both_edits_landed,
    emacs_with_eglot,
    scripted_options,
    session_env,
)

BIN = Path(sys.executable).parent  # the venv's rass, ruff and agentls
AREA = "def area(r):\n    return pi * r**2\n"
FIXED = "from math import pi\n\n\ndef area(r):\n    return pi * r**2\n"
DOC = '    """Return the area of a circle of radius r."""\n'
DOCUMENTED = FIXED.replace("def area(r):\n", "def area(r):\n" + DOC)

SCRIPT = {"steps": [
    {"match": {"user": "Undefined name", "tool_results": False},
     "reply": {"tool_calls": [{"id": "fix", "name": "edit_file", "arguments": {
         "path": "area.py",
         "edits": [{"search": "def area(r):\n",
                    "replace": "from math import pi\n\n\ndef area(r):\n"}]}}]}},
    {"match": {"user": "Undefined name", "tool_results": True},
     "reply": {"text": "Imported pi from math."}},
    {"match": {"user": "docstring", "tool_results": False},
     "reply": {"tool_calls": [{"id": "doc", "name": "edit_file", "arguments": {
         "path": "area.py",
         "edits": [{"search": "def area(r):\n", "replace": "def area(r):\n" + DOC}]}}]}},
    {"match": {"user": "docstring", "tool_results": True},
     "reply": {"text": "Added a docstring to area()."}},
]}


def test_eglot_fixes_ruffs_diagnostic_through_rass(tmp_path: Path) -> None:
    emacs = emacs_with_eglot()
    for tool in ("rass", "ruff", "agentls"):
        if not (BIN / tool).exists():
            pytest.skip(f"{tool} is not installed in this venv: pip install -e '.[dev]'")
    project = tmp_path / "project"
    project.mkdir()
    (project / "area.py").write_text(AREA)
    log = tmp_path / "server.log"
    report = tmp_path / "report.json"
    with ReplayServer(SCRIPT) as model:
        # rass hands a server the options under a pattern its name matches (a server's name
        # is its program's, "#N" added after the first): ruff gets none of AgentLS's.
        options = {"rass": {"agentls": scripted_options(model.base_url)}}
        server = [str(BIN / "rass"), "--",
                  str(BIN / "agentls"), "serve", "--log-file", str(log),
                  "--", str(BIN / "ruff"), "server"]
        env = session_env(
            tmp_path, server=json.dumps(server), options=json.dumps(options),
            file=str(project / "area.py"), linter="1", fixed="from math import pi",
            chat="Add a docstring to area()", out=str(report))
        done = subprocess.run([emacs, "--batch", "-l", str(SESSION)], env=env, cwd=project,
                              capture_output=True, text=True, timeout=120)
        remaining = model.remaining_steps()
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    result = json.loads(report.read_text())
    print("\n".join(result["steps"]))
    print("menu:", result["menu"])

    assert result["errors"] == [], (result, output)
    # flymake shows ruff's diagnostic (from ruff, through rass; AgentLS publishes none).
    assert any(d.startswith("2: ") and "Undefined name `pi`" in d
               for d in result["diagnostics"]), result["diagnostics"]
    # eglot's menu at that line lists AgentLS's Fix for it, beside ruff's own actions.
    assert any(t.startswith("AgentLS: Fix 'Undefined name `pi`") for t in result["menu"]), \
        result["menu"]
    # The fix, then the chat's edit: in the buffer, in the saved file, recorded applied.
    assert_both_edits_landed(result, project / "area.py", DOCUMENTED,
                             "Added a docstring to area().", remaining, log)
