"""The OpenAI-compatible /v1/embeddings provider, against the scripted server (its vectors
are hashed bags of words, not a real model: texts sharing words come out close)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentls.devtools.replay.command import ReplayServer
from agentls.index.embedding import EmbeddingError
from agentls.index.index import SemanticIndex
from agentls.index.openai_embedder import OpenAIEmbedder
from agentls.index.service import WorkspaceSearch
from agentls.llm.retry import RetryPolicy
from agentls.workspace.fence import Workspace


def embedder(server: ReplayServer, model: str = "scripted-model", **kw: object) -> OpenAIEmbedder:
    return OpenAIEmbedder(server.base_url, model, None, error_type=EmbeddingError,
                          retry=RetryPolicy(max_retries=0), **kw)  # type: ignore[arg-type]


def test_batches_and_normalises(server: ReplayServer) -> None:
    texts = [f"function number {i}" for i in range(150)]  # three requests of <= 64
    vectors = embedder(server).embed(texts)
    assert vectors.shape == (150, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    same = embedder(server).embed(["function number 7"])[0]
    assert float(vectors[7] @ same) == pytest.approx(1.0, abs=1e-5)


def test_unknown_model_is_an_embedding_error(server: ReplayServer) -> None:
    with pytest.raises(EmbeddingError, match=r"model_not_found.*no-such-model"):
        embedder(server, "no-such-model").embed(["x"])


def test_unreachable_endpoint_is_an_embedding_error() -> None:
    dead = OpenAIEmbedder("http://127.0.0.1:9/v1", "m", None, error_type=EmbeddingError,
                          retry=RetryPolicy(max_retries=0), timeout=5)
    with pytest.raises(EmbeddingError, match="connection"):
        dead.embed(["x"])


def test_index_with_the_scripted_endpoint(server: ReplayServer, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def total_price(cart):\n    return sum(cart)\n\n\n"
                                   "def send_mail(to):\n    return to\n")
    search = WorkspaceSearch(SemanticIndex(Workspace([tmp_path]), embedder(server)))
    assert search.update().vectors_added == 2
    assert search.index.status().provider == "openai"
    result = search.search("cart total price", 2)
    assert result.mode == "hybrid" and result.hits[0].symbol == "total_price"
    assert result.hits[0].match == "both"
