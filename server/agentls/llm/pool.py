"""The configured backends, created on first use, one client each, all closed on shutdown."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agentls.llm.backend import BackendError
from agentls.llm.openai_compat import OpenAICompatBackend
from agentls.llm.retry import RetryPolicy
from agentls.settings.config import Settings, api_key, user_cache_dir

if TYPE_CHECKING:  # llm/cache.py is imported when the cache is first opened
    from agentls.llm.cache import ResponseCache

log = logging.getLogger(__name__)


def open_cache(settings: Settings) -> ResponseCache:
    from agentls.llm.cache import ResponseCache

    return ResponseCache(
        user_cache_dir() / "responses",
        ttl_s=settings.cache.ttl_s,
        max_mb=settings.cache.max_mb,
    )


class BackendPool:
    def __init__(
        self,
        settings: Settings,
        *,
        env: Mapping[str, str] | None = None,
        cache: ResponseCache | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.settings = settings
        self._env = env
        self._cache = cache if cache is not None or not settings.cache.enabled else None
        self._cache_opened = cache is not None or not settings.cache.enabled
        self._retry = retry or RetryPolicy(
            max_retries=settings.retry.max_retries,
            base_delay=settings.retry.base_delay_s,
            max_delay=settings.retry.max_delay_s,
        )
        self._backends: dict[str, OpenAICompatBackend] = {}
        self._lock = threading.Lock()

    @property
    def cache(self) -> ResponseCache | None:
        if not self._cache_opened:
            from agentls.llm.cache import CacheUnavailable

            self._cache_opened = True
            try:
                self._cache = open_cache(self.settings)
            except CacheUnavailable as exc:
                # Requests still work without a cache; say why they are not cached.
                log.warning("%s Requests are sent without it.", exc)
        return self._cache

    def get(self, name: str | None = None) -> OpenAICompatBackend:
        """The backend called ``name`` (default: the active one), created once and reused;
        safe to call from several threads (the server builds it ahead of the first chat in
        one, while that chat may already ask for it on the event loop)."""
        name = name or self.settings.backend
        found = self._backends.get(name)
        if found is not None:
            return found
        with self._lock:
            return self._create(name)

    def _create(self, name: str) -> OpenAICompatBackend:
        if name not in self._backends:
            config = self.settings.backends.get(name)
            if config is None:
                names = ", ".join(sorted(self.settings.backends))
                raise BackendError(
                    "bad_request",
                    f"no backend named {name!r} is configured (configured: {names})",
                    backend=name,
                )
            if config.type != "openai":
                # An agent CLI is no model server: sending it chat requests would go to its
                # default base_url (api.openai.com) with our key.
                raise BackendError(
                    "bad_request",
                    f"backend {name!r} is the {config.type} agent CLI, not a model server; "
                    "use it with `agentls run` or `agentls loop`",
                    backend=name,
                )
            self._backends[name] = OpenAICompatBackend(
                name,
                config,
                api_key=api_key(config, self._env),
                retry=self._retry,
                open_cache=lambda: self.cache,
            )
        return self._backends[name]

    async def aclose(self) -> None:
        backends, self._backends = list(self._backends.values()), {}
        for backend in backends:
            await backend.aclose()
        if self._cache is not None:
            self._cache.close()
