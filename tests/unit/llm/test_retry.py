"""Retry timing with an injected clock: no real sleeping."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentls.llm.backend import BackendError, RetryNotice
from agentls.llm.messages import ChatChunk, ChatResponse
from agentls.llm.retry import RetryPolicy


class FakeClock:
    def __init__(self) -> None:
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def policy(clock: FakeClock, jitter: float = 1.0, **kwargs: float) -> RetryPolicy:
    return RetryPolicy(sleep=clock.sleep, jitter=lambda: jitter, **kwargs)  # type: ignore[arg-type]


async def test_backoff_doubles_up_to_the_cap_and_reports_each_retry() -> None:
    clock = FakeClock()
    notices: list[RetryNotice] = []
    calls = 0

    async def attempt() -> str:
        nonlocal calls
        calls += 1
        if calls <= 3:
            raise BackendError("server_error", "boom", status_code=503)
        return "ok"

    result = await policy(clock, base_delay=1.0, max_delay=3.0).call(attempt, notices.append)
    assert result == "ok"
    assert clock.slept == [1.0, 2.0, 3.0]  # 1, 2, then 4 capped at 3
    assert [(n.attempt, n.max_retries, n.reason) for n in notices] == [
        (1, 3, "server_error"), (2, 3, "server_error"), (3, 3, "server_error")]
    assert [n.delay for n in notices] == clock.slept


async def test_jitter_keeps_at_least_half_the_backoff() -> None:
    clock = FakeClock()
    p = policy(clock, jitter=0.0, base_delay=2.0)
    error = BackendError("rate_limit", "slow")
    assert p.delay_for(1, error) == 1.0
    assert p.delay_for(2, error) == 2.0
    assert policy(clock, jitter=0.5, base_delay=2.0).delay_for(2, error) == 3.0


async def test_gives_up_after_max_retries_with_the_last_error() -> None:
    clock = FakeClock()
    calls = 0

    async def attempt() -> str:
        nonlocal calls
        calls += 1
        raise BackendError("server_error", f"failure {calls}", status_code=503)

    with pytest.raises(BackendError) as info:
        await policy(clock).call(attempt)
    assert calls == 4  # the first try and 3 retries
    assert info.value.kind == "server_error" and info.value.message == "failure 4"
    assert len(clock.slept) == 3


@pytest.mark.parametrize("kind", ["auth", "bad_request", "model_not_found", "context_too_long"])
async def test_never_retries_permanent_errors(kind: str) -> None:
    clock = FakeClock()
    calls = 0

    async def attempt() -> str:
        nonlocal calls
        calls += 1
        raise BackendError(kind, "no")  # type: ignore[arg-type]

    with pytest.raises(BackendError):
        await policy(clock).call(attempt)
    assert calls == 1 and clock.slept == []


async def test_retry_after_is_honoured_exactly_without_jitter() -> None:
    clock = FakeClock()
    errors = [BackendError("rate_limit", "slow", retry_after=7.0)]

    async def attempt() -> str:
        if errors:
            raise errors.pop()
        return "ok"

    assert await policy(clock, jitter=0.0).call(attempt) == "ok"
    assert clock.slept == [7.0]


async def test_retry_after_longer_than_the_cap_is_reported_not_waited() -> None:
    clock = FakeClock()

    async def attempt() -> str:
        raise BackendError("rate_limit", "slow", retry_after=120.0)

    with pytest.raises(BackendError) as info:
        await policy(clock, max_delay=30.0).call(attempt)
    assert clock.slept == []
    assert "asks to wait 120 s" in info.value.message


async def test_stream_retried_before_first_chunk_not_after() -> None:
    clock = FakeClock()
    opened = 0

    async def fails_then_streams() -> AsyncIterator[ChatChunk]:
        nonlocal opened
        opened += 1
        if opened == 1:
            raise BackendError("connection", "dropped")
        yield ChatChunk("text", text="hi")
        yield ChatChunk("done", response=ChatResponse(text="hi"))

    chunks = [c async for c in policy(clock).stream(fails_then_streams)]
    assert [c.kind for c in chunks] == ["text", "done"] and opened == 2

    async def dies_mid_answer() -> AsyncIterator[ChatChunk]:
        yield ChatChunk("text", text="partial")
        raise BackendError("connection", "dropped", partial=ChatResponse(text="partial"))

    seen: list[str] = []
    with pytest.raises(BackendError) as info:
        async for chunk in policy(clock).stream(dies_mid_answer):
            seen.append(chunk.text)
    assert seen == ["partial"]
    assert info.value.partial is not None and info.value.partial.text == "partial"
    assert len(clock.slept) == 1  # only the first stream's retry
