"""A file a sandboxed command writes reaches the editor in the run's one WorkspaceEdit; the
command's caches do not, and the disk is untouched until the editor applies the edit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from agentls.devtools.replay.command import ReplayServer
from agentls.sandbox.bwrap import probe
from tests.lsp.conftest import AgentClient, call

pytestmark = pytest.mark.skipif(not probe().available, reason="no sandbox here")


async def test_a_shell_written_file_joins_the_workspace_edit(
        client: AgentClient, model: ReplayServer, project: Path) -> None:
    (project / "test_calc.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    command = (f"{sys.executable} -m pytest -q test_calc.py && "
               "echo 'made by the shell' > src/generated.txt")
    model.load({"steps": [
        {"match": {"user": "generate", "tool_results": False}, "reply": {"tool_calls": [
            call("shell_exec", "s1", command=command)]}},
        {"match": {"tool_results": True}, "reply": {"text": "Generated."}},
    ]})
    result = await client.chat("please generate")

    generated = project / "src" / "generated.txt"
    assert result["stopReason"] == "done"
    assert {(c["uri"], c["kind"]) for c in result["changes"]} == {(generated.as_uri(), "create")}
    edit = client.edits[0].edit
    creates = [c.uri for c in edit.document_changes or () if isinstance(c, lsp.CreateFile)]
    assert creates == [generated.as_uri()]  # no .pytest_cache, no __pycache__
    assert not generated.exists() and not (project / ".pytest_cache").exists()
