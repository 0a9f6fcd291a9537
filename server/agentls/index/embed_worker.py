"""all-MiniLM-L6-v2 in a process of its own, so the process that indexes stays small.

torch and sentence-transformers hold about 570 MB while they embed; in the language server
that would be resident for as long as the editor is open. ``WorkerEmbedder`` is the
``local`` embedder as the server and the CLI use it: it starts
``python -P -m agentls.index.embed_worker`` on first use (through
``agentls.base.python_child``, outside the workspace: none of the workspace's files is imported),
sends it batches of texts, and gets vectors back. The worker exits after ``IDLE_S`` without
work (the memory goes back to the system) and is started again when needed; a worker that
dies is restarted once per batch, then the batch fails with ``EmbeddingError`` (search falls
back to BM25 and says so).

Wire (pipes): one JSON line per request, ``{"texts": [...]}``; the answer is one JSON line,
``{"rows": n, "dim": d}`` followed by n·d float32 values (little-endian), or
``{"error": "..."}``. The worker's stdout is its wire only: anything a library prints goes
to its stderr, which the parent keeps the end of for error messages.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

from agentls.base.python_child import module_argv, neutral_cwd
from agentls.index.embedding import MINILM, EmbeddingError, MiniLMEmbedder

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

IDLE_S = 120.0  # a worker with nothing to do for this long exits
STDERR_LINES = 20  # kept for error messages


class WorkerEmbedder:
    """The ``local`` embedder, run in a worker process (see the module's docstring)."""

    provider = "local"
    model = MINILM

    def __init__(self, idle_s: float = IDLE_S) -> None:
        self.idle_s = idle_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._lock = threading.Lock()
        self.started = 0  # workers started so far (tests and benchmarks read it)

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def _start(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            module_argv("agentls.index.embed_worker", str(self.idle_s)),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=neutral_cwd())
        self.started += 1
        self._stderr.clear()
        threading.Thread(target=self._drain, args=(proc.stderr,), daemon=True,
                         name="agentls-embed-worker-stderr").start()
        return proc

    def _drain(self, stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip()
            self._stderr.append(line)
            log.debug("embedding worker: %s", line)

    def _ask(self, proc: subprocess.Popen[bytes], texts: Sequence[str]) -> np.ndarray | None:
        """The vectors, or None when the worker is gone (exited idle, crashed)."""
        import numpy as np

        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps({"texts": list(texts)}).encode() + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline()
        except (BrokenPipeError, ConnectionResetError):
            return None
        if not header:
            return None
        answer = json.loads(header)
        if "error" in answer:
            raise EmbeddingError(str(answer["error"]))
        rows, dim = int(answer["rows"]), int(answer["dim"])
        data = proc.stdout.read(rows * dim * 4)
        if len(data) != rows * dim * 4:
            return None
        return np.frombuffer(data, dtype="<f4").reshape(rows, dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            for attempt in (1, 2):
                if self._proc is None or self._proc.poll() is not None:
                    self._proc = self._start()
                vectors = self._ask(self._proc, texts)
                if vectors is not None:
                    return vectors
                code = self._proc.wait()
                self._proc = None
                if attempt == 2 or code != 0:  # 0: it had exited idle; try a new one
                    tail = " | ".join(list(self._stderr)[-3:]) or "no output"
                    raise EmbeddingError(f"the local embedding worker exited (code {code}): "
                                         f"{tail}")
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def serve(idle_s: float) -> int:
    """The worker: answer requests on stdin until EOF or ``idle_s`` without one."""
    wire = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever torch or transformers print goes to stderr, not the wire
    embedder = MiniLMEmbedder()
    stdin = sys.stdin.buffer
    while True:
        ready, _, _ = select.select([stdin], [], [], idle_s)
        if not ready:
            return 0  # idle: give the memory back
        line = stdin.readline()
        if not line:
            return 0
        try:
            texts = json.loads(line)["texts"]
            vectors = embedder.embed(texts)
        except EmbeddingError as exc:
            wire.write(json.dumps({"error": str(exc)}).encode() + b"\n")
        except (ValueError, KeyError, TypeError) as exc:
            wire.write(json.dumps({"error": f"bad request to the worker: {exc}"}).encode()
                       + b"\n")
        else:
            rows, dim = vectors.shape
            wire.write(json.dumps({"rows": rows, "dim": dim}).encode() + b"\n")
            wire.write(vectors.astype("<f4").tobytes())
        wire.flush()


if __name__ == "__main__":
    sys.exit(serve(float(sys.argv[1]) if len(sys.argv) > 1 else IDLE_S))
