"""The first request of a run: its size on the wire, and how much of it the tool schemas take.

The agent runs on a small project against the scripted model server over real HTTP; the
request the server received is measured as compact JSON (what the openai client sends).
The baseline is the same request built with the tool descriptions as they were before they
were tightened (issue 16), recorded below; the figure is the ratio.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from agentls.devtools.replay.command import ReplayServer
from agentls.engine.events import RecordingFrontend
from agentls.engine.loop.agent import Agent, RunRequest
from agentls.engine.sessions.store import SessionStore
from agentls.llm.pool import BackendPool
from agentls.settings.config import BackendConfig, CacheConfig, RetryConfig, Settings
from agentls.workspace.fence import Workspace
from bench.harness import Figure

# Measured by this module at commit 47da067 (before the tool schemas were tightened).
BEFORE_REQUEST_BYTES = 9_932
BEFORE_TOOLS_BYTES = 6_628


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


async def first_request(folder: Path) -> dict[str, Any]:
    """The body of the first chat request of `run "fix add"` on a two-file project."""
    root = folder / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "README.md").write_text("# calc\n")
    with ReplayServer({"steps": [{"reply": {"text": "Done."}}]}) as server:
        settings = Settings(
            backend="scripted",
            backends={"scripted": BackendConfig(base_url=server.base_url, model="scripted-model",
                                                api_key_env=None)},
            cache=CacheConfig(enabled=False), retry=RetryConfig(max_retries=0),
        )
        pool = BackendPool(settings)
        store = SessionStore.for_workspace(root)
        try:
            agent = Agent(settings, pool, store)
            session = store.create_session(backend="scripted", model="scripted-model")
            result = await agent.run(session.id, RunRequest("Fix add in src/calc.py"),
                                     RecordingFrontend(), Workspace([root]))
            assert result.stop_reason == "done", result.error_message
        finally:
            await pool.aclose()
            store.close()
        body = server.requests[0].body
    assert isinstance(body, dict)
    return body


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory() as folder:
        body = asyncio.run(first_request(Path(folder)))
    total, tools = _size(body), _size(body.get("tools", []))
    return [
        Figure("first request of a run, bytes", total, "bytes", BEFORE_REQUEST_BYTES,
               "ratio <= 0.90", total <= 0.90 * BEFORE_REQUEST_BYTES),
        Figure("tool schemas in the first request, bytes", tools, "bytes", BEFORE_TOOLS_BYTES,
               "ratio <= 0.85", tools <= 0.85 * BEFORE_TOOLS_BYTES),
    ]
