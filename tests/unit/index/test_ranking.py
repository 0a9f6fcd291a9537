"""The ranking rules (index/ranking.py) and the search around them (index/query.py): fusion,
symbol routing, path words, penalties, one answer per file, fenced files never returned."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentls.index.index import SemanticIndex
from agentls.index.query import fuse, fuse_scores
from agentls.index.ranking import (
    Candidate,
    is_symbol_query,
    path_penalty,
    rank_files,
    small_index_fade,
    symbol_name,
)
from agentls.index.service import WorkspaceSearch
from agentls.workspace.fence import Workspace


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def order(query: str, *candidates: tuple[str, str, float]) -> list[str]:
    pool = [Candidate(n, path, symbol, score) for n, (path, symbol, score) in enumerate(candidates)]
    return [chunks[0].path for chunks, _ in rank_files(query, pool)]


@pytest.mark.parametrize(("query", "symbol"), [
    ("ClientSession", True), ("field_validator", True), ("Sinatra::Base", True),
    ("getUser", True), ("Engine", True), ("_private", True), ("a.b", True),
    ("response", False), ("how are routes registered", False), ("JSON parser", False),
])
def test_symbol_queries(query: str, symbol: bool) -> None:
    assert is_symbol_query(query) is symbol


def test_symbol_name_is_the_last_part() -> None:
    assert symbol_name("Sinatra::Base") == "Base"
    assert symbol_name("Rack.Builder") == "Builder"
    assert symbol_name("TCPConnector") == "TCPConnector"


def test_fusion_is_weighted_reciprocal_rank() -> None:
    fused = dict(fuse([([1, 2, 3], 1.0), ([3, 4], 0.5)]))
    assert fused[3] == pytest.approx(1 / 13 + 0.5 / 11)
    assert fused[1] == pytest.approx(1 / 11)
    assert list(dict(fuse([([1, 2], 1.0), ([2], 1.0)]))) == [2, 1]


def test_a_symbol_query_puts_its_definition_first() -> None:
    # The definition had the lowest score (found only by the definition lookup).
    assert order("Engine", ("docs/usage.go", "main", 0.09), ("context.go", "Context.Next", 0.08),
                 ("gin.go", "Engine", 0.0))[0] == "gin.go"
    # Defined in a file named after it beats a namesake defined elsewhere.
    assert order("Router", ("routing/mod.rs", "Router", 0.01),
                 ("extract/path.rs", "Router", 0.01))[0] == "routing/mod.rs"
    # A method of that name counts (``Class.method``); a word inside a name does not.
    assert order("ConfigDict", ("types.py", "ConfigDictLike", 0.1),
                 ("config.py", "ConfigDict", 0.0))[0] == "config.py"


def test_a_symbol_in_a_sentence_counts_half() -> None:
    ranked = order("how ZodType parses input", ("api.ts", "parse", 0.1),
                   ("schemas.ts", "ZodType", 0.02))
    assert ranked[0] == "schemas.ts"


def test_path_words_lift_files_named_for_the_query() -> None:
    assert order("how are routes registered", ("applications.py", "FastAPI", 0.1),
                 ("routing.py", "", 0.08))[0] == "routing.py"
    # A plural or a longer form shares the stem ("dependency" / dependencies/utils.py).
    assert order("dependency injection", ("params.py", "", 0.1),
                 ("dependencies/utils.py", "", 0.08))[0] == "dependencies/utils.py"


@pytest.mark.parametrize("path", [
    "tests/test_client.py", "lib/client_test.go", "web/app.spec.ts", "docs/client.md",
    "README.md", "examples/client.py", "vendor/lib/client.go", "dist/client.min.js",
    "node_modules/x/index.js",
])
def test_tests_docs_vendored_and_generated_files_come_after_sources(path: str) -> None:
    assert path_penalty(path, {"client"}) < 1.0
    assert order("client", (path, "", 0.1), ("lib/client.py", "", 0.05))[0] == "lib/client.py"


def test_asking_for_tests_or_docs_lifts_their_penalty() -> None:
    assert path_penalty("tests/test_client.py", {"tests", "client"}) == 1.0
    assert path_penalty("docs/guide.md", {"docs", "guide"}) == 1.0
    assert path_penalty("src/client.py", set()) == 1.0


def test_one_answer_per_file_best_chunk_first_and_several_hits_count_a_little() -> None:
    pool = [Candidate(1, "a.py", "f", 0.10), Candidate(2, "a.py", "g", 0.12),
            Candidate(3, "b.py", "h", 0.125)]
    ranked = rank_files("something", pool)
    assert [[c.chunk_id for c in chunks] for chunks, _ in ranked] == [[2, 1], [3]]
    # a.py's best chunk scores below b.py's, its second hit lifts it above.
    assert ranked[0][1] > ranked[1][1]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root / ".gitignore", "secret/\n")
    write(root / "server/engine.py",
          "class Engine:\n    '''Runs the handlers of each request.'''\n\n"
          "    def handle(self, request):\n        return request\n\n\n"
          "def run_engine(engine):\n    return engine.handle(None)\n")
    for n in range(6):
        write(root / f"server/use_{n}.py",
              f"from server.engine import Engine\n\n\ndef start_{n}():\n"
              f"    engine = Engine()\n    return engine.handle(Engine)\n")
    write(root / "secret/engine.py",
          "class Engine:\n    '''Runs the handlers of each request, engine engine.'''\n")
    write(root / "tests/test_engine.py",
          "from server.engine import Engine\n\n\ndef test_engine():\n    assert Engine()\n")
    return root


def test_search_routes_symbols_answers_once_per_file_and_never_returns_fenced_files(
        repo: Path) -> None:
    index = SemanticIndex(Workspace([repo]))
    index.update()
    search = WorkspaceSearch(index)
    try:
        for query in ("Engine", "engine handlers of each request", "Engine.handle"):
            hits = search.search(query, 10).hits
            paths = [h.path for h in hits]
            assert paths[0] == "server/engine.py", (query, paths)
            assert len(paths) == len(set(paths))  # one answer per file
            assert not any(p.startswith("secret/") for p in paths), (query, paths)
            assert paths.index("tests/test_engine.py") > 0
        hit = search.search("Engine", 10).hits[0]
        assert hit.symbol == "Engine" and hit.start_line == 1
        # The file's other matching chunk is named with its hit.
        spans = search.search("Engine", 10).hits[0].spans()
        assert spans[0][2] == "Engine" and (8, 9, "run_engine") in spans
    finally:
        search.close()


def test_score_fusion_sums_min_max_normalised_scores() -> None:
    fused = dict(fuse_scores([([(1, 0.9), (2, 0.5), (3, 0.1)], 1.0), ([(3, 12.0), (4, 4.0)], 1.0)]))
    assert fused[1] == pytest.approx(1.0)
    assert fused[2] == pytest.approx(0.5)
    assert fused[3] == pytest.approx(1.0)  # last by cosine (0), first by BM25 (1)
    assert fused[4] == pytest.approx(0.0)
    # A weight scales its ranking; equal scores (or one candidate) all count as the best.
    assert dict(fuse_scores([([(3, 12.0), (4, 4.0)], 0.5)]))[3] == pytest.approx(0.5)
    assert dict(fuse_scores([([(5, 0.3), (6, 0.3)], 1.0)])) == {5: 1.0, 6: 1.0}
    assert fuse_scores([([], 1.0)]) == []


def test_score_fusion_keeps_a_distant_second_distant() -> None:
    # By reciprocal ranks the second is close behind the first whatever its cosine.
    fused = dict(fuse_scores([([(1, 0.9), (2, 0.2), (3, 0.19)], 1.0)]))
    assert fused[1] - fused[2] > 0.9


def test_the_fade_is_the_share_of_the_index_outside_the_candidates() -> None:
    assert small_index_fade(50, 120_000) == pytest.approx(1 - 50 / 120_000)
    assert small_index_fade(30, 40) == pytest.approx(0.25)
    assert small_index_fade(60, 40) == 0.0
    assert small_index_fade(50, None) == 1.0


def test_coherence_fades_where_every_chunk_is_a_candidate() -> None:
    pool = [Candidate(1, "a.py", "f", 0.10), Candidate(2, "a.py", "g", 0.12),
            Candidate(3, "b.py", "h", 0.125)]
    # A large index: a.py's second hit lifts it above b.py (as without a size).
    assert [chunks[0].path for chunks, _ in rank_files("something", pool, 100_000)] == [
        "a.py", "b.py"]
    # Every chunk a candidate: no coherence, each file by its best chunk.
    ranked = rank_files("something", pool, 3)
    assert [chunks[0].path for chunks, _ in ranked] == ["b.py", "a.py"]
    assert [score for _, score in ranked] == pytest.approx([0.125, 0.12])


def test_the_penalties_fade_on_a_small_index() -> None:
    pool = [Candidate(1, "docs/deploy.md", "", 0.30), Candidate(2, "deploy.sh", "", 0.20)]

    def docs_score(index_chunks: int | None) -> float:
        return next(score for chunks, score in rank_files("undo a broken rollout", pool,
                                                          index_chunks)
                    if chunks[0].path == "docs/deploy.md")

    # A large index: the docs page is penalised below the script.
    assert order("undo a broken rollout", *[(c.path, c.symbol, c.score) for c in pool]) == [
        "deploy.sh", "docs/deploy.md"]
    # Every chunk a candidate: no penalty (and no coherence), the page by its own score.
    ranked = rank_files("undo a broken rollout", pool, 2)
    assert [chunks[0].path for chunks, _ in ranked] == ["docs/deploy.md", "deploy.sh"]
    assert ranked[0][1] == pytest.approx(0.30)
    assert docs_score(None) < docs_score(8) < docs_score(4) < docs_score(2)
