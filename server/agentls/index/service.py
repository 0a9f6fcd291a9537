"""An index together with the vectors loaded for searching it: what a tool call, the CLI
and the LSP server hold for one workspace."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from agentls.index.index import Progress, SemanticIndex, UpdateStats
from agentls.index.query import SearchResult, search
from agentls.index.rerank import Reranker
from agentls.index.vector_cache import VectorCache


class WorkspaceSearch:
    """An index plus the vectors loaded for search, and the reranker interactive searches
    use (``agentls search``, the agent's ``search_semantic``), if any."""

    def __init__(self, index: SemanticIndex, reranker: Reranker | None = None) -> None:
        self.index = index
        self.reranker = reranker
        self.cache = VectorCache()
        self.update_lock = threading.Lock()  # one update at a time; searches go on meanwhile

    def search(self, query: str, top_k: int = 8, *, lexical_only: bool = False,
               interactive: bool = False) -> SearchResult:
        """``interactive``: a person or the agent waits for this answer and it may take a
        second (the reranker runs); completions and the chat context pass False."""
        return search(self.index, self.cache, query, top_k, lexical_only=lexical_only,
                      reranker=self.reranker if interactive else None)

    def update(self, paths: list[Path] | None = None, *, progress: Progress | None = None,
               embed: bool = True, embed_budget_s: float | None = None,
               cancelled: Callable[[], bool] | None = None) -> UpdateStats:
        """Bring the index up to date (one update at a time). ``embed_budget_s`` caps the
        time spent embedding: chunks left without vectors are still found by BM25."""
        deadline = None if embed_budget_s is None else time.monotonic() + embed_budget_s
        with self.update_lock:
            return self.index.update(paths, progress=progress, embed=embed, deadline=deadline,
                                     cancelled=cancelled)

    def save_vectors(self) -> None:
        """Make the vectors' copy beside the index current, so the first search of a new
        process reads it in one go (``vector_file.py``); nothing when it is current already
        or the index has no vectors."""
        if self.index.embedder is not None:
            self.cache.load(self.index)

    def close(self) -> None:
        self.index.close()
        if self.reranker is not None:
            self.reranker.close()
