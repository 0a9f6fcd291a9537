"""words.identifiers_as_words, split and cached, writes what one substitution per name did."""

from __future__ import annotations

import re
from pathlib import Path

from agentls.index.words import identifiers_as_words, split_identifier

SOURCES = Path(__file__).resolve().parents[3] / "server" / "agentls"


def _one_substitution_per_name(text: str) -> str:
    return re.sub(r"[A-Za-z_][A-Za-z0-9_]*",
                  lambda m: " ".join(split_identifier(m.group(0))) or m.group(0), text)


def test_the_same_text_as_a_substitution_per_name() -> None:
    texts = [path.read_text() for path in sorted(SOURCES.glob("index/*.py"))]
    texts += ["", "42", "__", "_x_", "a", "x1y2Z3", "été totalWithTax", "HTTP\\nServer"]
    for text in texts:
        assert identifiers_as_words(text) == _one_substitution_per_name(text)
