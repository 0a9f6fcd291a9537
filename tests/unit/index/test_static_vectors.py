"""The static model read without model2vec's loader gives model2vec's vectors, bit for bit:
the index and the queries stay as they were (same vectors, same rankings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentls.index.chunker import chunk_file
from agentls.index.embedding import (
    MAX_CHARS,
    SHIPPED_STATIC_DIR,
    EmbeddingError,
    StaticEmbedder,
    embedding_input,
    static_model_built,
    write_recipe_marker,
)
from agentls.index.static_vectors import WORD_BATCH, StaticVectors

SOURCES = Path(__file__).resolve().parents[3] / "server" / "agentls" / "index"


def _texts() -> list[str]:
    """What the index embeds (chunks of real code under their path and symbol), queries,
    and the edges: empty, only unknown tokens, control characters, accents, CJK, over 512
    tokens, over 512 × the median token length in characters."""
    texts = [embedding_input(path.name, chunk.symbol, chunk.text)[:MAX_CHARS]
             for path in sorted(SOURCES.glob("*.py"))
             for chunk in chunk_file(path.name, path.read_text())]
    texts += ["scale the matrix by a factor", "where are routes registered?", "", " \t\n",
              "\x00\x01\x7f", "naïve café Ünïcödé", "日本語のテキスト", "☃" * 40, "x" * 5000,
              " ".join(f"word{n}" for n in range(900)), "retryRateLimit\x0bparse_HTTP2"]
    return texts


@pytest.fixture
def model2vec_model() -> Any:
    """model2vec's own reading of the shipped model (a fresh one per test)."""
    model2vec = pytest.importorskip("model2vec", reason="needs agentls[local] (make install)")
    if not static_model_built(SHIPPED_STATIC_DIR):
        pytest.fail("the static model is not built into the package: run `make install`")
    return model2vec.StaticModel.from_pretrained(str(SHIPPED_STATIC_DIR))


def test_the_vectors_are_model2vec_s(model2vec_model: Any) -> None:
    texts = _texts()
    ours = StaticVectors(SHIPPED_STATIC_DIR).encode(texts)
    theirs = model2vec_model.encode(texts)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert np.array_equal(ours, theirs)
    assert len(texts) > 100 and (~ours.any(axis=1)).sum() >= 2  # "" and "\x00\x01\x7f": zeros


def test_a_float32_table_too(model2vec_model: Any, tmp_path: Path) -> None:
    """A model distilled by an older model2vec (float32 rows) reads the same way."""
    model = model2vec_model
    model.embedding = model.embedding.astype(np.float32)
    model.save_pretrained(str(tmp_path / "f32"))
    texts = [*_texts()[:60], "x" * 5000]
    ours = StaticVectors(tmp_path / "f32").encode(texts)
    assert ours.dtype == np.float32
    assert np.array_equal(ours, model.encode(texts))


def test_another_layout_is_an_embedding_error(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    folder = tmp_path / "quantised"
    folder.mkdir()
    for name in ("tokenizer.json", "config.json"):
        (folder / name).write_bytes((SHIPPED_STATIC_DIR / name).read_bytes())
    save_file({"embeddings": np.zeros((4, 8), np.float16),
               "mapping": np.zeros(4, np.int64)}, str(folder / "model.safetensors"))
    write_recipe_marker(folder)  # this recipe's marker, another layout
    with pytest.raises(EmbeddingError, match="not a static model agentls built"):
        StaticEmbedder(tmp_path, shipped=folder).embed(["x"])


@pytest.fixture(scope="module")
def shipped() -> StaticVectors:
    if not static_model_built(SHIPPED_STATIC_DIR):
        pytest.fail("the static model is not built into the package: run `make install`")
    return StaticVectors(SHIPPED_STATIC_DIR)


_CODE_LIKE = st.text(st.sampled_from(
    "aZ09_ \t\n\r\x00\x01\x0b\x0c\x1f\x7f.,;:!?'\"()[]{}<>=+-*/\\|&^%$#@~`PADUNK"), max_size=300)


@settings(max_examples=300, deadline=None)
@example(["x[PAD]y", "[UNK]", "a[pad]b [UNK", "tab\there", "ctl\x0bx\x1fy\x7fz",
          "a" * 150, "retry_rate(limit=3)", "x" * 5000, *["def f(): pass"] * 8])
@given(st.lists(st.one_of(st.text(st.characters(max_codepoint=127), max_size=200),
                          _CODE_LIKE), min_size=WORD_BATCH, max_size=WORD_BATCH + 8))
def test_words_looked_up_give_the_tokenizer_s_ids(shipped: StaticVectors,
                                                  texts: list[str]) -> None:
    """Any ASCII (control characters, punctuation, "[PAD]" and "[UNK]" written out): the
    ids of a batch cut into words here are the tokenizer's for each whole text."""
    whole = [e.ids for e in shipped._tokenizer.encode_batch_fast(texts,
                                                                 add_special_tokens=False)]
    assert shipped._token_ids(texts) == whole
    assert shipped._words  # the batch was cut into words here
