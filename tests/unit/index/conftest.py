"""What the semantic search tests share: the check that a labelled query (tests/workspaces)
is fair, i.e. shares no word with its target chunk, its symbol or its path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentls.devtools.search_eval import Labelled
from agentls.index.chunker import chunk_file
from agentls.index.words import code_words, split_identifier

REPO = Path(__file__).resolve().parents[2] / "workspaces" / "semantic_repo"


def _shares_no_word_with_its_target(labelled: Labelled) -> None:
    text = (REPO / labelled.path).read_text()
    targets = [c for c in chunk_file(labelled.path, text) if c.symbol == labelled.symbol]
    assert targets, labelled
    words = set(code_words(" ".join(c.text for c in targets) + " " + labelled.symbol))
    words |= {w for part in labelled.path.split("/") for w in split_identifier(part)}
    assert not set(code_words(labelled.query)) & words, labelled.query


@pytest.fixture
def shares_no_word_with_its_target() -> Callable[[Labelled], None]:
    """Asserts that the labelled query has a target chunk and shares none of its words."""
    return _shares_no_word_with_its_target
