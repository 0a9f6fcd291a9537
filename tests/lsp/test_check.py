"""The editor sees the loop's check of its own work: a `check` tool call whose result lists
the new problems the language server found (rendered by the VS Code panel and the Neovim
chat buffer as any tool result), then the fix, all in the run's one WorkspaceEdit. The
agent's servers are set in the editor's `agentls.lsp` table beside its own keys."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from agentls.sandbox.bwrap import probe
from tests.cli.test_check import BROKEN, FIXED, steps
from tests.lsp.conftest import AgentClient, initialize, options_for

pytestmark = pytest.mark.skipif(not probe().available, reason="no sandbox here")
PYRIGHT = os.path.join(os.path.dirname(sys.executable), "basedpyright-langserver")


async def test_the_check_reaches_the_editor_as_a_tool_result_listing_the_problem(
        bare_client: AgentClient, model: ReplayServer, tmp_path: Path) -> None:
    if not os.access(PYRIGHT, os.X_OK):
        pytest.skip("basedpyright is not installed (the dev extra has it)")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (root / "lib.py").write_text("def greet(name: str) -> str:\n    return 'hi ' + name\n")
    (root / "app.py").write_text("from lib import greet\n\nprint(greet('x'))\n")
    options = options_for(model, detect=False, servers={"basedpyright": {
        "command": PYRIGHT, "startup_timeout_s": 60}})
    options["agent"] = {"check_timeout_s": 60}
    await initialize(bare_client, client_capabilities("visual-studio-code"), root, options)
    model.load({"steps": steps()})
    result = await bare_client.chat("Please add a count to app.py")
    assert result["stopReason"] == "done"
    events = bare_client.events(result["runId"])
    calls = [e for e in events if e.get("kind") == "toolCall" and e.get("name") == "check"]
    results = [e for e in events if e.get("kind") == "toolResult" and e.get("name") == "check"]
    assert len(calls) == len(results) == 2
    first, last = (r["summary"] for r in results)
    assert first.startswith("1 new error in the changed files: app.py:3:14 error (new): ")
    assert BROKEN in first
    assert last.startswith("no new errors")
    # One WorkspaceEdit, with the fix in it.
    [sent] = bare_client.edits
    [change] = [c for c in sent.edit.document_changes or ()
                if isinstance(c, lsp.TextDocumentEdit)]
    assert any(FIXED in e.new_text for e in change.edits)
