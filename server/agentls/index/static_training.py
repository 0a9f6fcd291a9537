"""Train the static model's token vectors on code, as model2vec's tokenlearn does (our own
small trainer; docs/SEMANTIC_SEARCH.md, "The first stage's model"). ``build_trained_model``
is what ``python -m agentls.index.build_static`` (``make install``) runs:

1. distil all-MiniLM-L6-v2 (the ``local`` extra's teacher) into a 384-dimension static
   table with model2vec, no PCA;
2. a corpus of code: definitions of the Python standard library (every installation has its
   sources, no network; none of it is a labelled or benchmark repository), cut by the
   index's chunker and written as the static embedder reads chunks, each with its name
   alone and its docstring alone beside it;
3. the teacher embeds that corpus; the token vectors and one shared linear map are fitted so
   that a text's mean token vector points where the teacher's vector does (1 − cosine,
   sparse Adam);
4. the Zipf (SIF) weights taken off, PCA to 256 dimensions, the weights put back; float16.

Everything is seeded and the thread count fixed: the same interpreter and packages give the
same model.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import random
import shutil
import sysconfig
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentls.index.chunker import chunk_file
from agentls.index.embedding import (
    MAX_CHARS,
    STATIC_RECIPE,
    chunk_name,
    embedding_input,
    write_recipe_marker,
)
from agentls.index.words import identifiers_as_words

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

SEED = 20260
THREADS = 2  # torch's CPU threads: float sums depend on how the work is split
TEACHER_TOKENS = 128  # the teacher reads this many word pieces of a text (it is faster)
# Folders that are not library code: tests, demos, the IDE, vendored packages.
SKIPPED = frozenset({"test", "tests", "idle_test", "idlelib", "turtledemo", "ensurepip",
                     "site-packages", "dist-packages", "lib2to3", "__pycache__"})


@dataclass(frozen=True)
class Recipe:
    """What the trainer does; ``describe`` is the model's recipe (its marker and name)."""

    definitions: int = 2400  # definitions embedded by the teacher (most of the build's time)
    epochs: int = 4
    batch: int = 64
    learning_rate: float = 2e-3
    dims: int = 256
    sif_coefficient: float = 1e-4

    def describe(self) -> str:
        return (f"trained on {self.definitions} standard-library definitions, {self.epochs} "
                f"epochs, pca {self.dims}")


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def corpus_files(root: Path) -> Iterator[tuple[str, str]]:
    """(path under root, text) of the Python sources under root, sorted, skipping tests,
    demos and vendored packages."""
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if SKIPPED.intersection(rel.parts[:-1]):
            continue
        try:
            yield rel.as_posix(), path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue


def docstrings(text: str) -> dict[str, str]:
    """Each documented definition's docstring (its first paragraph), by its symbol as the
    chunker names it (``Class.method``)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    found: dict[str, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                symbol = f"{prefix}.{child.name}" if prefix else child.name
                doc = ast.get_docstring(child)
                if doc:
                    found[symbol] = doc.split("\n\n")[0].strip()
                visit(child, symbol)
    visit(tree, "")
    return found


def corpus_texts(files: Sequence[tuple[str, str]], definitions: int,
                 seed: int = SEED) -> list[str]:
    """A seeded sample of ``definitions`` chunks, each as the static embedder reads it, and
    beside each its name alone and its docstring alone when it has one."""
    candidates: list[tuple[str, str, str, str]] = []
    for path, text in files:
        docs = docstrings(text)
        for chunk in chunk_file(path, text):
            if chunk.symbol and len(chunk.text.strip()) > 40:
                candidates.append((path, chunk.symbol, chunk.text, docs.get(chunk.symbol, "")))
    picked = random.Random(seed).sample(candidates, min(definitions, len(candidates)))
    texts: list[str] = []
    for path, symbol, text, doc in picked:
        texts.append(identifiers_as_words(embedding_input(path, symbol, text)[:MAX_CHARS]))
        texts.append(identifiers_as_words(chunk_name(path, symbol)))
        if doc:
            texts.append(identifiers_as_words(doc[:MAX_CHARS]))
    return texts


def teacher_vectors(texts: Sequence[str], model_path: Path) -> np.ndarray:
    """The teacher's unit vectors of texts (sentence-transformers, CPU)."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(SEED)
    model = SentenceTransformer(str(model_path), device="cpu")
    model.max_seq_length = TEACHER_TOKENS
    vectors: np.ndarray = model.encode(list(texts), batch_size=32, show_progress_bar=False,
                                       convert_to_numpy=True, normalize_embeddings=True)
    return vectors


def token_ids(tokenizer: Any, texts: Sequence[str], unknown: int | None) -> list[list[int]]:
    """Each text's word pieces as the static model reads them (no special tokens, unknown
    pieces dropped), cut where the teacher stops reading."""
    encoded = tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
    return [[i for i in e.ids[:TEACHER_TOKENS - 2] if i != unknown] for e in encoded]


def train(table: np.ndarray, ids: Sequence[Sequence[int]], targets: np.ndarray,
          recipe: Recipe, seed: int = SEED) -> tuple[np.ndarray, list[float]]:
    """Fit the token vectors and one shared linear map (starting as the identity) so each
    text's mean token vector has the teacher's direction (loss: 1 − cosine; sparse Adam on
    the rows, only those a batch uses move; Adam at a tenth of the rate on the map).
    Returns the mapped table and the mean loss over the texts before training and after
    each epoch."""
    import numpy as np
    import torch

    torch.manual_seed(seed)
    kept = [(row, list(t)) for row, t in enumerate(ids) if t]
    bag = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(table, dtype=torch.float32),
                                                freeze=False, mode="mean", sparse=True)
    dim = table.shape[1]
    shared = torch.nn.Linear(dim, dim, bias=False)
    with torch.no_grad():
        shared.weight.copy_(torch.eye(dim))
    goal = torch.tensor(targets, dtype=torch.float32)
    optimisers: list[Any] = [
        torch.optim.SparseAdam(list(bag.parameters()), lr=recipe.learning_rate),
        torch.optim.Adam(shared.parameters(), lr=recipe.learning_rate / 10),
    ]
    order = np.random.default_rng(seed)
    losses = [mean_loss(bag, shared, kept, goal)]
    for _ in range(recipe.epochs):
        shuffled = [kept[i] for i in order.permutation(len(kept))]
        for start in range(0, len(shuffled), recipe.batch):
            for optimiser in optimisers:
                optimiser.zero_grad()
            batch_loss(bag, shared, shuffled[start:start + recipe.batch], goal).backward()
            for optimiser in optimisers:
                optimiser.step()
        losses.append(mean_loss(bag, shared, kept, goal))
    with torch.no_grad():
        rows = shared(bag.weight)
    return rows.detach().numpy().astype(np.float32), losses


def batch_loss(bag: Any, shared: Any, rows: Sequence[tuple[int, list[int]]], goal: Any) -> Any:
    """Mean of 1 − cosine between each text's mapped mean token vector and its teacher's."""
    import torch

    flat = torch.tensor([i for _, t in rows for i in t], dtype=torch.long)
    offsets = torch.tensor([0] + [len(t) for _, t in rows[:-1]], dtype=torch.long).cumsum(0)
    predicted = shared(bag(flat, offsets)) if shared is not None else bag(flat, offsets)
    wanted = goal[[row for row, _ in rows]]
    return (1 - torch.nn.functional.cosine_similarity(predicted, wanted)).mean()


def mean_loss(bag: Any, shared: Any, rows: Sequence[tuple[int, list[int]]], goal: Any) -> float:
    import torch

    with torch.no_grad():
        return float(batch_loss(bag, shared, rows, goal)) if rows else 0.0


def loss_of(table: np.ndarray, ids: Sequence[Sequence[int]], targets: np.ndarray) -> float:
    """The loss of a (mapped) table on texts it may not have seen (a validation figure)."""
    import torch

    bag = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(table, dtype=torch.float32),
                                                mode="mean")
    kept = [(row, list(t)) for row, t in enumerate(ids) if t]
    return mean_loss(bag, None, kept, torch.tensor(targets, dtype=torch.float32))


def zipf_weights(rows: int, sif_coefficient: float) -> np.ndarray:
    """model2vec's SIF weight of each row (``compute_weights``: its token's frequency
    estimated by Zipf's law from its rank in the vocabulary), as a float32 column."""
    import numpy as np
    from model2vec.distill.inference import compute_weights

    weights: np.ndarray = np.asarray(compute_weights(rows, sif_coefficient),
                                     dtype=np.float32)[:, None]
    return weights


def pca(table: np.ndarray, dims: int) -> np.ndarray:
    """The rows centred and projected on their first ``dims`` principal axes (model2vec's
    ``apply_pca``: eigenvectors of the covariance, largest first); each axis's sign fixed so
    its largest component is positive, so the result does not depend on the eigen solver."""
    import numpy as np

    centred = table - table.mean(axis=0)
    covariance = (centred.T @ centred) / (len(table) - 1)
    _, vectors = np.linalg.eigh(covariance.astype(np.float64))
    axes = vectors[:, ::-1][:, :dims]
    axes *= np.sign(axes[np.argmax(np.abs(axes), axis=0), np.arange(axes.shape[1])])
    return (centred @ axes).astype(np.float32)


def build_trained_model(target: Path, teacher: Path, recipe: Recipe = Recipe(),
                        corpus_root: Path | None = None) -> list[float]:
    """Distil, train and save the static model into ``target``, whole or not at all (an
    old model there is replaced only once the new one is complete). Needs the local extra
    (torch, sentence-transformers, model2vec). Returns the training losses."""
    import numpy as np
    import torch
    from model2vec.distill import distill
    from safetensors.numpy import load_file, save_file
    from tokenizers import Tokenizer

    torch.set_num_threads(THREADS)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        log.warning("distilling %s into static vectors (384 dimensions)", teacher.name)
        distill(model_name=str(teacher), pca_dims=None, device="cpu").save_pretrained(str(tmp))
        texts = corpus_texts(list(corpus_files(corpus_root or stdlib_root())), recipe.definitions)
        log.warning("the teacher embeds %d texts of code", len(texts))
        targets = teacher_vectors(texts, teacher)
        table = load_file(str(tmp / "model.safetensors"))["embeddings"].astype(np.float32)
        tokenizer = Tokenizer.from_file(str(tmp / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        ids = token_ids(tokenizer, texts, tokenizer.token_to_id(tokenizer.model.unk_token))
        trained, losses = train(table, ids, targets, recipe)
        log.warning("trained: loss %s", " -> ".join(f"{x:.3f}" for x in losses))
        # The distilled rows carry the SIF weights: PCA of the unweighted rows, then again.
        weights = zipf_weights(len(trained), recipe.sif_coefficient)
        final = pca(trained / weights, recipe.dims) * weights
        save_file({"embeddings": final.astype(np.float16)}, str(tmp / "model.safetensors"))
        config = json.loads((tmp / "config.json").read_text())
        config.update(hidden_dim=recipe.dims, apply_pca=recipe.dims, normalize=True,
                      sif_coefficient=recipe.sif_coefficient, embedding_dtype="float16")
        (tmp / "config.json").write_text(json.dumps(config, indent=1))
        write_recipe_marker(tmp, STATIC_RECIPE if recipe == Recipe() else recipe.describe())
        for saved in tmp.iterdir():  # readable by every user of a shared installation
            saved.chmod(0o644)
        replace_folder(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return losses


def replace_folder(new: Path, target: Path) -> None:
    """``new`` becomes ``target``; an old ``target`` is moved aside first and removed after,
    so ``target`` is at every moment the old model, absent, or the new one whole."""
    old = target.with_name(target.name + f".old{os.getpid()}")
    if target.exists():
        os.replace(target, old)
    os.replace(new, target)
    shutil.rmtree(old, ignore_errors=True)
