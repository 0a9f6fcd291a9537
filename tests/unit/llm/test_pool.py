"""The backend pool: one backend per name, model servers only, a cache that never blocks."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agentls.devtools.replay.command import ReplayServer
from agentls.llm.backend import BackendError
from agentls.llm.messages import ChatRequest, Message
from agentls.llm.pool import BackendPool
from agentls.settings.config import BackendConfig, Settings, user_cache_dir


async def test_a_backend_is_created_once_and_reused() -> None:
    pool = BackendPool(Settings(backend="ollama"))
    try:
        assert pool.get() is pool.get("ollama")
        assert pool.get().name == "ollama"
    finally:
        await pool.aclose()


async def test_an_agent_cli_backend_is_refused() -> None:
    settings = Settings(backends={"codex": BackendConfig(type="codex")}, backend="codex")
    pool = BackendPool(settings)
    try:
        with pytest.raises(BackendError, match="codex agent CLI, not a model server"):
            pool.get()
    finally:
        await pool.aclose()


async def test_a_damaged_cache_is_skipped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    directory: Path = user_cache_dir() / "responses"
    directory.mkdir(parents=True)
    (directory / "cache.db").write_bytes(b"not a database " * 100)
    pool = BackendPool(Settings(backend="ollama"))
    try:
        with caplog.at_level(logging.WARNING, logger="agentls.llm.pool"):
            backend = pool.get()
        assert backend.cache is None
        assert "agentls cache clear" in caplog.text
    finally:
        await pool.aclose()



async def test_the_cache_opens_only_when_a_request_may_be_answered_from_it(
        server: ReplayServer) -> None:
    """Agent runs are not answered from the cache (unless cache.agent_runs): their requests
    must not open it either (diskcache's import and the SQLite file, before a first request
    that does not need them). A request that may be answered from it opens it."""
    server.load({"steps": [{"times": "*", "reply": {"text": "Hello"}}]})
    settings = Settings(backend="scripted", backends={
        "scripted": BackendConfig(base_url=server.base_url, model="scripted-model")})
    folder = user_cache_dir() / "responses"
    pool = BackendPool(settings)
    try:
        backend = pool.get()
        request = ChatRequest([Message("user", "hi")])
        assert [c.text async for c in backend.stream(request, use_cache=False)
                if c.kind == "text"] == ["Hello"]
        assert not folder.exists()
        async for _ in backend.stream(request):
            pass
        assert folder.is_dir()
        cached = [c async for c in backend.stream(request)]
        assert all(c.cached for c in cached) and len(server.requests) == 2
    finally:
        await pool.aclose()
