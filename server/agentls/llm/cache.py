"""Two-level response cache: an in-memory LRU in front of diskcache in the user cache folder.

The key is the SHA-256 of the canonical JSON of the exact request (backend, base URL, model,
messages, tools, sampling parameters). Content is hashed as it is: never lower-cased or
stripped, so ``Foo`` and ``foo`` are different requests. Only complete, successful responses
are stored. API keys are not part of the request and never reach the cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentls.llm.messages import ChatRequest, ChatResponse, canonical_json
from agentls.policy.redaction import redact_data

log = logging.getLogger(__name__)

_HITS = "agentls:stats:hits"
_MISSES = "agentls:stats:misses"


class CacheUnavailable(Exception):
    """The on-disk cache cannot be opened; the message says what to do."""

    def __init__(self, directory: Path, cause: BaseException) -> None:
        reason = getattr(cause, "strerror", None) or str(cause) or type(cause).__name__
        super().__init__(
            f"the response cache in {directory} cannot be used: {reason}. Run "
            "`agentls cache clear` to start it afresh, or turn it off with "
            "`agentls config set cache.enabled false`.")
        self.directory = directory


def request_key(
    request: ChatRequest,
    *,
    backend: str,
    base_url: str,
    model: str,
    max_tokens: int | None,
    temperature: float | None,
) -> str:
    """SHA-256 over the canonical JSON of everything that shapes the answer.

    Each message and tool contributes the SHA-256 of its own canonical JSON, computed once
    per message: a long history resent on every iteration is serialised and hashed once,
    and the key stays exactly as discriminating as hashing the whole text.
    """
    head = canonical_json(
        {
            "backend": backend,
            "base_url": base_url,
            "max_tokens": max_tokens,
            "model": model,
            "temperature": temperature,
        }
    )
    digest = hashlib.sha256(head.encode("utf-8"))
    digest.update(b"\nmessages")
    for message in request.messages:
        digest.update(message.wire_digest())
    digest.update(b"\ntools")
    for tool in request.tools:
        digest.update(tool.wire_digest())
    return digest.hexdigest()


@dataclass(frozen=True)
class CacheStats:
    entries: int
    size_bytes: int
    hits: int
    misses: int
    directory: str


class ResponseCache:
    def __init__(
        self,
        directory: Path,
        *,
        ttl_s: int = 7 * 24 * 3600,
        max_mb: int = 256,
        memory_entries: int = 256,
    ) -> None:
        # Imported here, not with the module (~7 ms): a run that never consults the cache
        # (agent runs do not, unless cache.agent_runs) never opens it (llm/pool.py).
        import diskcache

        self.directory = directory
        self.ttl_s = ttl_s
        # What a damaged, locked or unwritable cache folder raises from diskcache.
        self._errors: tuple[type[BaseException], ...] = (sqlite3.Error, OSError,
                                                         diskcache.Timeout)
        try:
            self._disk = diskcache.Cache(str(directory), size_limit=max_mb * 1024 * 1024)
        except self._errors as exc:
            raise CacheUnavailable(directory, exc) from None
        self._disk_failed = False  # after the first disk error only the memory level serves
        self._memory: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()
        self._memory_entries = memory_entries
        self._lock = threading.Lock()
        # Counted in memory and written on flush, so a hit never waits on a disk write.
        self._pending = {_HITS: 0, _MISSES: 0}

    def get(self, key: str) -> ChatResponse | None:
        now = time.time()
        with self._lock:
            held = self._memory.get(key)
            if held is not None and (held[0] == 0 or held[0] > now):
                self._memory.move_to_end(key)
                self._count(_HITS)
                return ChatResponse.from_dict(held[1], cached=True)
        stored = None
        if not self._disk_failed:
            try:
                stored = self._disk.get(key, expire_time=True)
            except self._errors as exc:
                self._disk_error(exc)
        data, expires = stored if isinstance(stored, tuple) else (None, None)
        if data is None:
            self._count(_MISSES)
            return None
        self._remember(key, data, expires or 0)
        self._count(_HITS)
        return ChatResponse.from_dict(data, cached=True)

    def put(self, key: str, response: ChatResponse) -> None:
        """Store a complete answer; truncated or failed ones are not worth replaying."""
        if response.finish_reason not in ("stop", "tool_calls"):
            return
        data = redact_data(response.to_dict())
        if not self._disk_failed:
            try:
                self._disk.set(key, data, expire=self.ttl_s or None)
            except self._errors as exc:
                self._disk_error(exc)
        self._remember(key, data, time.time() + self.ttl_s if self.ttl_s else 0)

    def _disk_error(self, exc: BaseException) -> None:
        # A cache must never fail a request: say so once, then answer from memory only.
        self._disk_failed = True
        log.warning("%s Answers are not cached on disk until then.",
                    CacheUnavailable(self.directory, exc))

    def _remember(self, key: str, data: dict[str, Any], expires: float) -> None:
        if self._memory_entries <= 0:
            return
        with self._lock:
            self._memory[key] = (expires, data)
            self._memory.move_to_end(key)
            while len(self._memory) > self._memory_entries:
                self._memory.popitem(last=False)

    def _count(self, name: str) -> None:
        self._pending[name] += 1
        if self._pending[name] >= 1000:
            self.flush_counts()

    def flush_counts(self) -> None:
        if self._disk_failed:
            return
        try:
            for name, count in self._pending.items():
                if count:
                    self._disk.incr(name, count, default=0)
                    self._pending[name] = 0
        except self._errors as exc:
            self._disk_error(exc)

    def stats(self) -> CacheStats:
        self.flush_counts()
        self._disk.expire()
        hits = int(self._disk.get(_HITS, 0))
        misses = int(self._disk.get(_MISSES, 0))
        return CacheStats(
            self._entry_count(),
            int(self._disk.volume()),
            hits,
            misses,
            str(self.directory),
        )

    def _entry_count(self) -> int:
        return sum(1 for k in self._disk.iterkeys() if k not in (_HITS, _MISSES))

    def clear(self) -> int:
        """Remove every stored answer and reset the counters; returns how many were removed."""
        with self._lock:
            self._memory.clear()
            self._pending = {_HITS: 0, _MISSES: 0}
        removed = self._entry_count()
        self._disk.clear()
        return removed

    def close(self) -> None:
        self.flush_counts()
        with contextlib.suppress(*self._errors):
            self._disk.close()
