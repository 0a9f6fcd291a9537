"""The editor and `agentls run --session S` in a terminal take turns on one session: while
another process holds the session's lock, the editor's chat waits (saying why) and reaches
the model only after that run ends; cancelling it stops the wait."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import AgentClient, initialize, options_for

HOLD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from agentls.engine.sessions.lock import SessionLock
    lock = SessionLock.acquire(Path(sys.argv[1]), sys.argv[2], wait=False)
    print("held", flush=True)
    sys.stdin.readline()  # until the test says so
    lock.release()
""")


def _hold(project: Path, session_id: str) -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(project), session_id],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.parametrize("editor", ["visual-studio-code"])
async def test_a_chat_waits_for_another_process_on_its_session(
        bare_client: AgentClient, model: ReplayServer, project: Path, editor: str) -> None:
    await initialize(bare_client, client_capabilities(editor), project, options_for(model))
    model.load({"steps": [{"reply": {"text": "ok"}, "times": "*"}]})
    first = await bare_client.chat("one")
    session_id = first["sessionId"]
    holder = _hold(project, session_id)
    try:
        pending = bare_client.send("agentls/chat", {"prompt": "two", "sessionId": session_id})
        waiting = await bare_client.wait_for_event(
            lambda e: e["kind"] == "status" and "another process" in e.get("message", ""))
        assert f"pid {holder.pid}" in waiting["message"]
        assert "cancel to stop waiting" in waiting["message"]
        await asyncio.sleep(0.5)
        assert len(model.requests) == 1 and not pending.done()  # still waiting its turn
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=10)
    second = await asyncio.wait_for(pending, 30)
    assert second["stopReason"] == "done" and second["text"] == "ok"
    assert len(model.requests) == 2


@pytest.mark.parametrize("editor", ["neovim"])
async def test_cancel_stops_the_wait_and_frees_nothing_it_never_held(
        bare_client: AgentClient, model: ReplayServer, project: Path, editor: str) -> None:
    await initialize(bare_client, client_capabilities(editor), project, options_for(model))
    model.load({"steps": [{"reply": {"text": "ok"}, "times": "*"}]})
    session_id = (await bare_client.chat("one"))["sessionId"]
    holder = _hold(project, session_id)
    try:
        pending = bare_client.send("agentls/chat", {"prompt": "two", "sessionId": session_id})
        waiting = await bare_client.wait_for_event(
            lambda e: e["kind"] == "status" and "another process" in e.get("message", ""))
        assert await bare_client.send("agentls/cancel", {"runId": waiting["runId"]}) \
            == {"cancelled": True}
        assert (await pending)["stopReason"] == "cancelled"
        assert len(model.requests) == 1
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=10)
    third = await bare_client.chat("three", sessionId=session_id)
    assert third["stopReason"] == "done"
