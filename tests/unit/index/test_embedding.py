"""What the embedders see of a chunk: the static model reads identifiers as words and leans a
chunk's vector towards its path and symbol; other embedders get ``embedding_input``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from agentls.index.embedding import (
    NAME_WEIGHT,
    SHIPPED_STATIC_DIR,
    StaticEmbedder,
    embed_chunks,
    embedding_input,
    normalise,
    static_model_built,
)
from agentls.index.words import identifiers_as_words


@pytest.mark.parametrize(("text", "words"), [
    ("totalWithTax(lines, rate)", "total with tax(lines, rate)"),
    ("call_with_backoff", "call with backoff"),
    ("parseHTTPHeader = x.HTTPServer2Json;", "parse http header = x.http server 2 json;"),
    ("_ = 42  # keep the rest", "_ = 42  # keep the rest"),
])
def test_identifiers_are_written_as_their_words(text: str, words: str) -> None:
    assert identifiers_as_words(text) == words


class Recording:
    """An embedder without a chunk method of its own: it sees ``embedding_input``."""

    provider, model = "fake", "recording"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return normalise(np.ones((len(texts), 4)))


def test_other_embedders_see_the_path_and_symbol_above_the_text() -> None:
    recording = Recording()
    embed_chunks(recording, [("web/cart.js", "applyCoupon", "return total;"),
                             ("README.md", "", "# Shop")])
    assert recording.seen == ["web/cart.js\napplyCoupon\nreturn total;", "README.md\n# Shop"]
    assert recording.seen[0] == embedding_input("web/cart.js", "applyCoupon", "return total;")


@pytest.fixture(scope="module")
def static(tmp_path_factory: pytest.TempPathFactory) -> StaticEmbedder:
    if not static_model_built(SHIPPED_STATIC_DIR):
        pytest.fail("the static model is not built into the package: run `make install`")
    return StaticEmbedder(tmp_path_factory.mktemp("cache"))


def test_the_static_model_reads_a_name_as_its_words(static: StaticEmbedder) -> None:
    joined, spaced = static.embed(["totalWithTax", "total with tax"])
    assert float(joined @ spaced) > 0.999


def test_a_static_chunk_vector_leans_towards_its_name(static: StaticEmbedder) -> None:
    """A long body's many tokens outweigh its name's few in a mean; the chunk's vector is
    pulled back towards the name (NAME_WEIGHT), so a query in the name's words finds it."""
    body = "\n".join(f"    step_{n} = values[{n}] * factor + offset" for n in range(30))
    chunk = ("src/geometry/rotation.py", "rotate_polygon", f"def rotate_polygon():\n{body}")
    leaning = embed_chunks(static, [chunk])[0]
    plain = static.embed([embedding_input(*chunk)])[0]
    name = static.embed(["src/geometry/rotation.py\nrotate_polygon"])[0]
    assert NAME_WEIGHT > 0
    assert float(leaning @ name) > float(plain @ name) + 0.05
    assert abs(float(np.linalg.norm(leaning)) - 1.0) < 1e-5
