"""`agentls acp`: the loop's check of its own work reaches the client as a `think` tool call
with the language server's findings as content (real basedpyright, sandboxed)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import acp
from agentls.devtools.replay.command import ReplayServer
from agentls.sandbox.bwrap import probe
from tests.acp.acp_helpers import RecordingClient, initialized, scripted_env, spawned
from tests.cli.test_check import FIXED, steps

pytestmark = pytest.mark.skipif(not probe().available, reason="no sandbox here")
PYRIGHT = os.path.join(os.path.dirname(sys.executable), "basedpyright-langserver")


async def test_the_check_is_a_think_tool_call_with_what_the_server_found(
        server: ReplayServer, tmp_path: Path) -> None:
    if not os.access(PYRIGHT, os.X_OK):
        pytest.skip("basedpyright is not installed (the dev extra has it)")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (project / "lib.py").write_text("def greet(name: str) -> str:\n    return 'hi ' + name\n")
    (project / "app.py").write_text("from lib import greet\n\nprint(greet('x'))\n")
    server.load({"steps": steps()})
    env = scripted_env(server, AGENTLS_LSP__DETECT="false",
                       AGENTLS_LSP__SERVERS__BASEDPYRIGHT__COMMAND=PYRIGHT,
                       AGENTLS_LSP__SERVERS__BASEDPYRIGHT__STARTUP_TIMEOUT_S="60",
                       AGENTLS_AGENT__CHECK_TIMEOUT_S="60")
    client = RecordingClient(permission="apply_all", fs_write=True)
    async with spawned(client, env, project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id,
                                   prompt=[acp.text_block("Please add a count to app.py")])
    assert answer.stop_reason == "end_turn"
    checks = [u for u in client.of("tool_call") if u.kind == "think"
              and u.title == "Check the changed files with the language servers"]
    assert len(checks) == 2  # after the first "done", and after the fix
    ends = {u.tool_call_id: u for u in client.of("tool_call_update")}
    first, last = (ends[c.tool_call_id].content[0].content.text for c in checks)
    assert first.startswith("1 new error in the changed files")
    assert "app.py:3:14 error (new)" in first
    assert last.startswith("no new errors")
    assert (project / "app.py").read_text().splitlines()[2] == FIXED
