""":checkhealth agentls lists the MCP servers: started as a run would start them, with their
state, how they run and their tool count, or the error and what to fix."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

from agentls.devtools.replay.command import ReplayServer
from agentls.sandbox.bwrap import probe
from tests.lsp.conftest import options_for
from tests.nvim.conftest import start_editor

pytestmark = pytest.mark.skipif(not probe().available, reason="no sandbox here")


def test_checkhealth_lists_mcp_servers(tmp_path: Path, project: Path, model: ReplayServer,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("AGENTLS_MCP__SERVERS__TIME__COMMAND",
                       str(Path(sys.executable).parent / "mcp-server-time"))
    monkeypatch.setenv("AGENTLS_MCP__SERVERS__GONE__COMMAND", "no-such-mcp-server-here")
    monkeypatch.chdir(project)
    editor = start_editor(tmp_path, project, options_for(model))
    try:
        editor.nvim.command("checkhealth agentls")
        report = "\n".join(editor.lines(editor.lua("return vim.api.nvim_get_current_buf()")))
    finally:
        with contextlib.suppress(Exception):
            editor.nvim.command("qa!")
        editor.nvim.close()
    assert ("OK MCP server time (stdio, sandboxed: no network, workspace read-only): "
            "running, 2 tools") in report
    assert "ERROR MCP server gone (stdio, sandboxed): failed:" in report
    assert "'no-such-mcp-server-here' is not on PATH" in report
    assert "Fix mcp.servers.gone" in report
