"""The real basedpyright (PyPI, in the dev extra), sandboxed, over a pending workspace."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from agentls.langservers.servers import LangServers
from agentls.settings.models import LangServerConfig, LspConfig
from agentls.settings.sandbox import SandboxSettings
from agentls.workspace.fence import Workspace

from .conftest import basedpyright

pytestmark = pytest.mark.usefixtures("sandboxed")


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found += [int(child), *_descendants(int(child))]
    return found


def _pool() -> LangServers:
    config = LspConfig(detect=False, servers={"basedpyright": LangServerConfig(
        command=basedpyright(), timeout_s=60, startup_timeout_s=60)})
    return LangServers(config, SandboxSettings(), secret_env="OPENAI_API_KEY")


def _workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (root / "lib.py").write_text("def greet(name: str) -> str:\n    return 'hi ' + name\n")
    (root / "app.py").write_text("from lib import greet\n\nold: int = 'already wrong'\n"
                                 "print(greet('x'))\n")
    return Workspace([root])


async def test_pending_edits_are_what_the_server_checks_and_new_problems_are_marked(
        tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    app = ws.resolve("app.py")
    ws.stage_write(app, "from lib import greet\n\nold: int = 'already wrong'\n"
                        "count: int = greet('x')\n")
    pool = _pool()
    try:
        answer = await pool.diagnostics(ws, [app.abs])
    finally:
        await pool.aclose()
    assert answer.failures == {}
    [file] = answer.files
    found = {(p.line, p.severity, p.new) for p in file.problems}
    assert (3, "error", False) in found  # on disk before the turn: not new
    assert (4, "error", True) in found  # the pending edit's mistake
    new = [p for p in file.problems if p.new]
    assert new[0].line_text == "count: int = greet('x')"
    assert '"str" is not assignable to declared type "int"' in new[0].message


async def test_definition_and_references_across_two_pending_files(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    lib, app = ws.resolve("lib.py"), ws.resolve("app.py")
    # Both files pending: a new function in lib.py, called from app.py.
    ws.stage_write(lib, "def greet(name: str) -> str:\n    return 'hi ' + name\n\n\n"
                        "def shout(name: str) -> str:\n    return greet(name).upper()\n")
    ws.stage_write(app, "from lib import greet, shout\n\nprint(shout('x'), greet('y'))\n")
    pool = _pool()
    try:
        definition = await pool.definition(ws, app.abs, 3, 7)
        references = await pool.references(ws, lib.abs, 5, 5)
    finally:
        await pool.aclose()
    assert definition.failures == {}
    assert [(p.path, p.line, p.line_text) for p in definition.places] == [
        ("lib.py", 5, "def shout(name: str) -> str:")]
    assert sorted((p.path, p.line) for p in references.places) == [
        ("app.py", 1), ("app.py", 3), ("lib.py", 5)]


async def test_a_server_killed_mid_request_is_restarted_and_answers(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    app = ws.resolve("app.py")
    pool = _pool()
    try:
        await pool.diagnostics(ws, [app.abs])  # started and warm
        [server] = pool.servers()
        first_pid = server.pid
        client = server.client
        assert client is not None and client._server is not None
        # Stopped first (the sandbox and the server in it), so it cannot answer before it is
        # killed: on a quiet machine it answered between the request going out and the kill,
        # and there was nothing to restart.
        for pid in (client._server.pid, *_descendants(client._server.pid)):
            os.kill(pid, signal.SIGSTOP)
        asking = asyncio.create_task(pool.references(ws, app.abs, 1, 17))
        while not client.protocol._request_futures:  # until the request is out
            await asyncio.sleep(0.001)
        client._server.kill()
        answer = await asking
    finally:
        await pool.aclose()
    assert answer.failures == {}
    assert {(p.path, p.line) for p in answer.places} >= {("app.py", 1), ("lib.py", 1)}
    assert server.restarts == 1 and server.pid != first_pid
