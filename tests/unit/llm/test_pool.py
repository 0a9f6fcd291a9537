"""The backend pool: one backend per name, model servers only, a cache that never blocks."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agentls.config import BackendConfig, Settings, user_cache_dir
from agentls.llm.backend import BackendError
from agentls.llm.pool import BackendPool


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

