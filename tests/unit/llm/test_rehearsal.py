"""The rehearsal of a backend's first request (llm/rehearsal.py): it does the first-time
work a first chat would otherwise wait for, through the same code, and sends nothing."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import textwrap

import httpx2
import pytest

from agentls.devtools.replay.command import ReplayServer
from agentls.llm import rehearsal
from agentls.llm.pool import BackendPool
from agentls.settings.config import Settings


def test_after_it_the_first_request_imports_nothing_and_it_sends_nothing(
        server: ReplayServer) -> None:
    """After ``rehearse()`` the first real request imports no module (without it that request
    imports ~15: the client's chat resource, anyio's event-loop backend ...), and the
    rehearsal itself sends nothing to the model server. In a fresh interpreter: this one has
    them all."""
    server.load({"steps": [{"reply": {"text": "Hello"}}]})
    code = textwrap.dedent(f"""
        import asyncio, json, sys
        from agentls.settings.config import BackendConfig, Settings
        from agentls.llm.messages import ChatRequest, Message
        from agentls.llm.pool import BackendPool
        from agentls.llm.rehearsal import rehearse
        settings = Settings(backend="scripted", cache={{"enabled": False}}, backends={{
            "scripted": BackendConfig(base_url={server.base_url!r}, model="scripted-model")}})
        pool = BackendPool(settings)
        backend = pool.get()
        rehearse(backend)
        before = set(sys.modules)

        async def first() -> str:
            text = ""
            async for chunk in backend.stream(ChatRequest([Message("user", "hi")])):
                text += chunk.text or ""
            await pool.aclose()
            return text

        text = asyncio.run(first())
        print(json.dumps({{"text": text, "new": sorted(set(sys.modules) - before)}}))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"text": "Hello", "new": []}
    assert [r.path for r in server.requests] == ["/v1/chat/completions"]  # the real one only


async def test_an_answer_not_read_back_as_sent_is_an_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def without_the_tool_call(request: httpx2.Request) -> httpx2.Response:
        event = {"id": "r", "object": "chat.completion.chunk", "created": 0, "model": "m",
                 "choices": [{"index": 0, "delta": {"content": rehearsal.TEXT},
                              "finish_reason": "stop"}]}
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=f"data: {json.dumps(event)}\n\ndata: [DONE]\n\n")

    monkeypatch.setattr(rehearsal, "_answer", without_the_tool_call)
    pool = BackendPool(Settings(backend="ollama"))
    try:
        with pytest.raises(RuntimeError, match="the rehearsed request was read as"):
            await asyncio.to_thread(rehearsal.rehearse, pool.get())  # as the server does
    finally:
        await pool.aclose()


async def test_its_log_lines_name_its_own_address(caplog: pytest.LogCaptureFixture) -> None:
    """httpx logs every request; the rehearsal's must not read as one to the model server."""
    pool = BackendPool(Settings(backend="ollama"))
    try:
        backend = pool.get()
        with caplog.at_level(logging.INFO, logger="httpx2"):
            await asyncio.to_thread(rehearsal.rehearse, backend)
    finally:
        await pool.aclose()
    requests = [r.getMessage() for r in caplog.records if "HTTP Request" in r.getMessage()]
    assert requests and all(rehearsal.URL in line for line in requests), requests
    assert not any(backend.config.base_url in line for line in requests)
