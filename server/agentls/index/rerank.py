"""Re-ranking the static vectors' best candidates with all-MiniLM-L6-v2 (issue 30).

The static (model2vec) vectors index 10,000 files in under 30 s, but on the labelled set
their recall@5 stays near 0.7: a token's vector, averaged, misses what a phrase means. Their
candidates are good, though (the target is in the first 20 for nearly every query), and
all-MiniLM-L6-v2 reads the phrase. So an interactive search (``agentls search``, the agent's
``search_semantic``) orders the first ``RERANK_CANDIDATES`` of the fused ranking by MiniLM's
cosine with the query; completions and the chat context keep the static order (they cannot
wait for a model to load). Figures are in docs/SEMANTIC_SEARCH.md.

The MiniLM vectors of the chunks it has read are kept in memory, keyed by chunk-text hash
(``CACHE_ROWS`` of them, the oldest dropped first): a process that searches again (the
language server, an agent run) embeds only the candidates it has not seen.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentls.index.embedding import MAX_CHARS, embedding_input, normalise

if TYPE_CHECKING:
    import numpy as np

    from agentls.index.embedding import Embedder

RERANK_CANDIDATES = 20  # recall@5 on the labelled set: 10 -> 0.76, 12 -> 0.91, 20 -> 0.94
CACHE_ROWS = 20_000  # 384 float32 each: about 31 MB at most
# MiniLM reads 256 word pieces; cutting the text there first saves tokenising the rest.
RERANK_CHARS = min(MAX_CHARS, 1200)


class Reranker:
    """Orders candidate chunks by an embedder's cosine with the query; raises
    EmbeddingError when the embedder fails (search keeps the first order and says so)."""

    def __init__(self, embedder: Embedder, capacity: int = CACHE_ROWS) -> None:
        self.embedder = embedder
        self.capacity = capacity
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return f"{self.embedder.provider}:{self.embedder.model}"

    def order(self, query: str,
              candidates: Sequence[tuple[int, str, str, str, str]]) -> list[tuple[int, float]]:
        """(chunk id, cosine) best first, for candidates given as (chunk id, text hash,
        path, symbol, text)."""
        import numpy as np

        with self._lock:
            known = {h: self._vectors[h] for _, h, _, _, _ in candidates if h in self._vectors}
        missing = list({h: (p, s, t) for _, h, p, s, t in candidates if h not in known}.items())
        texts = [query] + [embedding_input(p, s, t)[:RERANK_CHARS] for _, (p, s, t) in missing]
        vectors = normalise(self.embedder.embed(texts))
        q = vectors[0]
        with self._lock:
            for (digest, _), row in zip(missing, vectors[1:], strict=True):
                known[digest] = row
                self._vectors[digest] = row
                self._vectors.move_to_end(digest)
            for digest in known:
                if digest in self._vectors:
                    self._vectors.move_to_end(digest)
            while len(self._vectors) > self.capacity:
                self._vectors.popitem(last=False)
        scores = [(chunk_id, float(np.dot(known[h], q))) for chunk_id, h, _, _, _ in candidates]
        return sorted(scores, key=lambda item: -item[1])

    def close(self) -> None:
        close = getattr(self.embedder, "close", None)  # a worker process to stop
        if close is not None:
            close()
