"""The ranking rules (index/ranking.py) and the search around them (index/query.py): fusion,
symbol routing, path words, penalties, one answer per file, fenced files never returned."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentls.index.index import SemanticIndex
from agentls.index.query import fuse
from agentls.index.ranking import (
    Candidate,
    is_symbol_query,
    path_penalty,
    rank_files,
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
