"""The local model in its own process: the real worker, the real all-MiniLM-L6-v2."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

from agentls.index.embed_worker import WorkerEmbedder
from agentls.index.embedding import EmbeddingError, MiniLMEmbedder, minilm_path

try:
    minilm_path()
except EmbeddingError:
    pytest.skip("agentls[local] is not installed", allow_module_level=True)


def test_worker_vectors_equal_in_process_ones_and_it_comes_back_after_idle_or_crash() -> None:
    texts = ["def retry_rate_limits(call):\n    return call()", "How to deploy the shop."]
    in_process = MiniLMEmbedder().embed(texts)
    worker = WorkerEmbedder(idle_s=3.0)
    try:
        vectors = worker.embed(texts)
        pid = worker.pid
        assert pid is not None and pid != os.getpid()
        assert vectors.shape == (2, 384) and worker.started == 1
        assert np.allclose(vectors, in_process, atol=1e-5)

        # Idle: the worker exits by itself (its memory goes back); the next batch restarts it.
        deadline = time.monotonic() + 30
        while worker.pid is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert worker.pid is None
        assert worker.embed(texts[:1]).shape == (1, 384) and worker.started == 2

        # Killed (out of memory, say): restarted once for the same batch.
        os.kill(worker.pid or 0, signal.SIGKILL)
        deadline = time.monotonic() + 30  # dead before the batch: a fixed sleep lost the race
        while worker.pid is not None and time.monotonic() < deadline:  # on a loaded machine
            time.sleep(0.05)
        assert worker.embed(texts).shape == (2, 384) and worker.started == 3
    finally:
        worker.close()
    assert worker.pid is None


def test_a_worker_that_cannot_run_is_an_embedding_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/nonexistent")
    monkeypatch.setattr("sys.executable", "/bin/false")
    worker = WorkerEmbedder()
    with pytest.raises(EmbeddingError, match="worker exited"):
        worker.embed(["x"])
