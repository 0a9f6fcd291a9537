"""The OpenAI-compatible ``/v1/embeddings`` provider of the search index (Ollama
``nomic-embed-text``, OpenAI ``text-embedding-3-small``, vLLM …).

It satisfies ``agentls.index.embedding.Embedder`` by shape (llm/ does not import
tools/). Indexing runs in worker threads, so ``embed`` is synchronous: each call runs its
batches on a private event loop with a client of its own, under the chat retry policy.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentls.llm.backend import BackendError
from agentls.llm.openai_compat import OpenAICompatBackend
from agentls.llm.retry import RetryPolicy
from agentls.settings.config import BackendConfig

if TYPE_CHECKING:
    import numpy as np

BATCH = 64
MAX_CHARS = 2000


class EmbeddingServiceError(Exception):
    """The endpoint failed after the retries; the message says what to check."""


class OpenAIEmbedder:
    provider = "openai"

    def __init__(self, base_url: str, model: str, api_key_env: str | None, *,
                 retry: RetryPolicy | None = None, timeout: float = 60.0,
                 error_type: type[Exception] = EmbeddingServiceError) -> None:
        self.model = model
        self._config = BackendConfig(base_url=base_url, model=model, api_key_env=api_key_env,
                                     timeout=timeout)
        self._retry = retry or RetryPolicy()
        self._error_type = error_type  # the index passes its EmbeddingError

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        rows = asyncio.run(self._embed_all([t[:MAX_CHARS] or " " for t in texts]))
        matrix = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return matrix / norms

    async def _embed_all(self, texts: list[str]) -> list[list[float]]:
        env = self._config.api_key_env
        backend = OpenAICompatBackend("embeddings", self._config,
                                      api_key=os.environ.get(env) if env else None,
                                      retry=self._retry)
        rows: list[list[float]] = []
        try:
            for start in range(0, len(texts), BATCH):
                rows.extend(await backend.embed(texts[start:start + BATCH]))
        except BackendError as exc:
            raise self._error_type(
                f"{exc.kind} from {self._config.base_url} (model {self.model!r}): "
                f"{exc.message}") from exc
        finally:
            await backend.aclose()
        return rows
