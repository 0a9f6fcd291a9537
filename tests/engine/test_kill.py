"""A run killed with SIGKILL mid-tool loses at most the message in flight, and the session
can carry on afterwards (calls left without results are answered as interrupted)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from agentls.engine.events import RecordingFrontend
from agentls.engine.loop.agent import RunRequest
from agentls.engine.sessions.store import SessionStore
from agentls.workspace.fence import Workspace
from tests.engine.conftest import Harness

CHILD = textwrap.dedent('''
    import asyncio, sys
    from pathlib import Path
    from agentls.settings.config import BackendConfig, CacheConfig, RetryConfig, Settings
    from agentls.engine.loop.agent import Agent, RunRequest
    from agentls.engine.events import RecordingFrontend
    from agentls.engine.sessions.store import SessionStore
    from agentls.llm.pool import BackendPool
    from agentls.tools.permission_gate import PermissionPolicy
    from agentls.workspace.fence import Workspace

    root, url, session_id = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    settings = Settings(backend="scripted", backends={"scripted": BackendConfig(
        base_url=url, model="scripted-model", api_key_env=None)},
        cache=CacheConfig(enabled=False), retry=RetryConfig(max_retries=0))

    class Front(RecordingFrontend):
        def on_event(self, event):
            if event.kind == "toolCall":
                print("TOOL", flush=True)  # the assistant message is stored by now

    async def main():
        store = SessionStore.for_workspace(root)
        # `sleep` allowed without asking, so the child blocks inside the tool.
        policy = PermissionPolicy(shell_allow=["sleep"])
        agent = Agent(settings, BackendPool(settings), store, policy=policy)
        await agent.run(session_id, RunRequest("run the slow thing"), Front(), Workspace([root]))

    asyncio.run(main())
''')


async def test_killed_run_leaves_a_usable_session(harness: Harness) -> None:
    sid = harness.session()
    harness.server.load({"steps": [
        {"match": {"user": "slow thing", "tool_results": False}, "reply": {
            "text": "Running it.", "tool_calls": [
                {"id": "k1", "name": "shell_exec",
                 "arguments": {"command": "sleep 30", "timeout": 60}}]}},
        {"match": {"user": "again"}, "reply": {"text": "Back again."}},
    ]})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(harness.root), harness.server.base_url, sid],
        stdout=subprocess.PIPE, text=True, env=env,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "TOOL"
    time.sleep(0.2)  # let the tool start
    child.send_signal(signal.SIGKILL)
    child.wait()

    reopened = SessionStore.for_workspace(harness.root)
    stored = [m.message for m in reopened.history(sid)]
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[1].tool_calls[0].id == "k1"
    reopened.close()

    result = await harness.agent.run(sid, RunRequest("again please"), RecordingFrontend(),
                                     Workspace([harness.root]))
    assert result.stop_reason == "done" and result.text == "Back again."
    sent = harness.server.requests[-1].body["messages"]
    interrupted = [m for m in sent if m["role"] == "tool"]
    assert interrupted and interrupted[0]["tool_call_id"] == "k1"
    assert "interrupted" in interrupted[0]["content"]
