"""The one retry policy: exponential backoff with jitter, honouring what the server asks for.

Retried: ``rate_limit``, ``server_error``, ``timeout``, ``connection``. Never retried: ``auth``,
``bad_request``, ``model_not_found``, ``context_too_long``. A server's ``Retry-After`` (or
``x-ratelimit-reset-*``) is honoured exactly; when it asks for longer than ``max_delay`` we stop
and report the wait instead of hanging the person's editor.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from agentls.llm.backend import BackendError, RetryCallback, RetryNotice
from agentls.llm.messages import ChatChunk

T = TypeVar("T")


@dataclass
class RetryPolicy:
    max_retries: int = 3
    base_delay: float = 1.0
    max_delay: float = 30.0
    # Injected in tests so retry timing is checked without sleeping.
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False)
    jitter: Callable[[], float] = field(default=random.random, repr=False)

    def delay_for(self, retry_number: int, error: BackendError) -> float | None:
        """Seconds to wait before retry ``retry_number`` (1-based), or None to give up."""
        if not error.retryable or retry_number > self.max_retries:
            return None
        if error.retry_after is not None:
            return error.retry_after if error.retry_after <= self.max_delay else None
        ceiling = min(self.max_delay, self.base_delay * 2 ** (retry_number - 1))
        # "Equal jitter": at least half the backoff, so retries never bunch up at zero.
        return ceiling / 2 + self.jitter() * ceiling / 2

    async def _wait_or_raise(
        self, retry_number: int, error: BackendError, on_retry: RetryCallback | None
    ) -> None:
        delay = self.delay_for(retry_number, error)
        if delay is None:
            waited_too_long = error.retry_after is not None and error.retry_after > self.max_delay
            if error.retryable and waited_too_long and retry_number <= self.max_retries:
                error.message += (
                    f" (the server asks to wait {error.retry_after:.0f} s, longer than "
                    f"retry.max_delay_s = {self.max_delay:.0f} s)"
                )
            raise error
        if on_retry is not None:
            on_retry(RetryNotice(retry_number, self.max_retries, delay, error.kind, error.backend))
        await self.sleep(delay)

    async def call(
        self, attempt: Callable[[], Awaitable[T]], on_retry: RetryCallback | None = None
    ) -> T:
        """Run ``attempt`` until it succeeds or the policy gives up."""
        retry_number = 0
        while True:
            try:
                return await attempt()
            except BackendError as error:
                retry_number += 1
                await self._wait_or_raise(retry_number, error, on_retry)

    async def stream(
        self,
        open_stream: Callable[[], AsyncIterator[ChatChunk]],
        on_retry: RetryCallback | None = None,
    ) -> AsyncIterator[ChatChunk]:
        """Retry a stream that fails before its first chunk; one that fails later is raised
        (its ``BackendError.partial`` keeps what arrived) because the text is already shown."""
        retry_number = 0
        while True:
            started = False
            try:
                async for chunk in open_stream():
                    started = True
                    yield chunk
                return
            except BackendError as error:
                if started:
                    raise
                retry_number += 1
                await self._wait_or_raise(retry_number, error, on_retry)
