"""Response cache: exact keys, two levels, TTL, only complete answers, counters."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agentls.llm.cache import CacheUnavailable, ResponseCache, request_key
from agentls.llm.messages import ChatRequest, ChatResponse, Message, ToolCall, ToolSpec, Usage


def key(request: ChatRequest, **overrides: object) -> str:
    params: dict[str, object] = {
        "backend": "local", "base_url": "http://h/v1", "model": "m",
        "max_tokens": 100, "temperature": 0.2,
    }
    params.update(overrides)
    return request_key(request, **params)  # type: ignore[arg-type]


def test_key_is_exact_content_never_normalised() -> None:
    upper = ChatRequest([Message.user("Foo")])
    lower = ChatRequest([Message.user("foo")])
    spaced = ChatRequest([Message.user("foo ")])
    assert len({key(upper), key(lower), key(spaced)}) == 3
    assert key(upper) == key(ChatRequest([Message.user("Foo")]))


def test_key_covers_everything_that_shapes_the_answer() -> None:
    request = ChatRequest([Message.user("hi")])
    base = key(request)
    assert key(request, backend="other") != base
    assert key(request, base_url="http://other/v1") != base
    assert key(request, model="m2") != base
    assert key(request, max_tokens=101) != base
    assert key(request, temperature=0.3) != base
    with_tools = ChatRequest([Message.user("hi")], tools=[ToolSpec("t", "d", {"type": "object"})])
    assert key(with_tools) != base
    with_system = ChatRequest([Message.system("s"), Message.user("hi")])
    assert key(with_system) != base


def response() -> ChatResponse:
    return ChatResponse("answer", [ToolCall("c1", "read_file", '{"path": "a"}')], "tool_calls",
                        Usage(10, 2, 12), "m")


def test_roundtrip_through_disk_survives_a_new_instance(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("k", response())
    cache.close()
    reopened = ResponseCache(tmp_path)
    hit = reopened.get("k")
    assert hit is not None and hit.cached
    assert hit.text == "answer" and hit.tool_calls[0].arguments == '{"path": "a"}'
    assert hit.usage.total_tokens == 12 and hit.finish_reason == "tool_calls"
    assert reopened.get("missing") is None
    stats = reopened.stats()
    assert (stats.entries, stats.hits, stats.misses) == (1, 1, 1)
    assert stats.size_bytes > 0
    reopened.close()


def test_memory_level_answers_after_disk_entry_is_gone(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path, memory_entries=1)
    cache.put("a", response())
    cache._disk.clear()  # only the in-memory LRU still holds it
    assert cache.get("a") is not None
    cache.put("b", response())  # evicts "a" from memory (size 1)
    assert cache.get("a") is None


def test_incomplete_answers_are_not_stored(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("cut", ChatResponse("half", finish_reason="length"))
    cache.put("bad", ChatResponse("", finish_reason="error"))
    assert cache.get("cut") is None and cache.get("bad") is None


def test_ttl_expires_entries(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path, ttl_s=1)
    cache.put("k", response())
    cache._memory.clear()
    cache._disk.set("k", response().to_dict(), expire=-1)  # already expired on disk
    assert cache.get("k") is None


def test_clear_removes_entries_and_counters(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("a", response())
    cache.put("b", response())
    cache.get("a")
    assert cache.clear() == 2
    stats = cache.stats()
    assert (stats.entries, stats.hits) == (0, 0)


def damage(directory: Path) -> None:
    for leftover in directory.glob("cache.db*"):
        leftover.unlink()
    (directory / "cache.db").write_bytes(b"not a database " * 100)


def test_a_damaged_cache_cannot_be_opened_and_says_what_to_do(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    damage(tmp_path)
    with pytest.raises(CacheUnavailable, match="agentls cache clear") as info:
        ResponseCache(tmp_path)
    assert info.value.directory == tmp_path


def test_disk_failing_after_open_falls_back_to_memory_and_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("a", response())
    cache._disk.close()
    damage(tmp_path)  # diskcache reconnects on the next use and finds garbage
    with caplog.at_level(logging.WARNING, logger="agentls.llm.cache"):
        assert cache.get("missing") is None
        cache.put("b", response())
        assert cache.get("a") is not None and cache.get("b") is not None
        cache.close()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "agentls cache clear" in warnings[0].getMessage()
