"""The index: incremental updates (edit, delete, rename), the fence, schema migration and
corruption, embedder changes."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from agentls.index import db as store
from agentls.index.embedding import EmbeddingError, normalise
from agentls.index.index import SemanticIndex
from agentls.index.service import WorkspaceSearch
from agentls.workspace.fence import Workspace


class CountingEmbedder:
    """A real (if tiny) embedder: letter-frequency vectors; counts what it was asked."""

    provider = "test"
    model = "letters"

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.fail = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail:
            raise EmbeddingError("connection refused")
        self.texts.extend(texts)
        rows = [[t.lower().count(c) + 0.01 for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts]
        return normalise(rows)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root / "src/net.py", "def retry_later(call):\n    return call()\n\n\n"
                               "def parse_header(h):\n    return h.split(':')\n")
    write(root / "src/db.py", "def open_database(path):\n    return path\n")
    write(root / "README.md", "# Shop\n\nHow to deploy the shop.\n")
    return root


def paths(index: SemanticIndex) -> list[str]:
    return [r[0] for r in index.conn.execute("SELECT path FROM files ORDER BY path")]


def test_full_then_incremental(tree: Path) -> None:
    embedder = CountingEmbedder()
    index = SemanticIndex(Workspace([tree]), embedder)
    first = index.update()
    assert first.files_changed == 3 and first.vectors_added == first.chunks_added == 4
    # What the embedder sees: the path, the symbol when there is one, then the text.
    assert sorted(embedder.texts) == [
        "README.md\n# Shop\n\nHow to deploy the shop.",
        "src/db.py\nopen_database\ndef open_database(path):\n    return path",
        "src/net.py\nparse_header\ndef parse_header(h):\n    return h.split(':')",
        "src/net.py\nretry_later\ndef retry_later(call):\n    return call()"]
    assert paths(index) == ["README.md", "src/db.py", "src/net.py"]

    again = index.update()  # nothing changed: nothing read, nothing embedded
    assert (again.files_changed, again.vectors_added) == (0, 0)

    # Edit one function: only that chunk is embedded again, under its path and symbol.
    embedder.texts.clear()
    net = tree / "src/net.py"
    net.write_text(net.read_text().replace("h.split(':')", "h.partition(':')"))
    edited = index.update([net])
    assert edited.files_changed == 1 and embedder.texts == [
        "src/net.py\nparse_header\ndef parse_header(h):\n    return h.partition(':')"]

    # Touching without changing the content re-reads but does not re-chunk.
    os.utime(net, (1, 1))
    assert index.update().files_changed == 0

    # Delete: its chunks and now unused vectors go.
    (tree / "src/db.py").unlink()
    deleted = index.update()
    assert deleted.files_removed == 1 and "src/db.py" not in paths(index)
    assert index.status().vectors == index.status().chunks == 3

    # Rename: the moved file's chunks keep their vectors (nothing embedded).
    embedder.texts.clear()
    (tree / "src/net.py").rename(tree / "src/http.py")
    renamed = index.update()
    assert renamed.files_removed == 1 and renamed.files_changed == 1
    assert embedder.texts == [] and paths(index) == ["README.md", "src/http.py"]
    hits = WorkspaceSearch(index).search("retry later", 3).hits
    assert hits[0].path == "src/http.py" and hits[0].symbol == "retry_later"


def test_targeted_updates_look_only_at_their_own_chunks(tree: Path) -> None:
    """What the editor sends on save and file events: paths. Vectors are made, kept and
    freed exactly as a full pass would, without scanning the index for them."""
    embedder = CountingEmbedder()
    index = SemanticIndex(Workspace([tree]), embedder)
    index.update()
    statements: list[str] = []
    index.conn.set_trace_callback(statements.append)

    embedder.texts.clear()
    net = tree / "src/net.py"
    net.write_text(net.read_text() + "\n\ndef close_socket(s):\n    s.close()\n")
    edited = index.update([net])
    assert embedder.texts == ["src/net.py\nclose_socket\ndef close_socket(s):\n    s.close()"]
    assert edited.vectors_added == 1 and edited.vectors_missing == 0
    # No whole-index query on an edit: vectors are only looked up (or freed) by key.
    scans = [q for q in statements if "GROUP BY" in q or (
        "vectors" in q and "WHERE hash IN (" not in q and not q.startswith("INSERT"))]
    assert scans == [], scans

    # Rename through events (old path gone, new path present): vectors reused, none freed.
    embedder.texts.clear()
    moved = tree / "src/http.py"
    net.rename(moved)
    renamed = index.update([net, moved])
    assert renamed.files_removed == 1 and embedder.texts == []
    assert index.status().vectors == index.status().chunks == 5

    # Delete through an event: its now unused vectors go, the rest stay.
    (tree / "src/db.py").unlink()
    index.update([tree / "src/db.py"])
    assert index.status().vectors == index.status().chunks == 4
    assert index.status().chunks_without_vectors == 0

    # A new embedder seen on a targeted update re-embeds everything, not just the path.
    index.embedder = other = CountingEmbedder()
    other.model = "letters-v2"
    readme = tree / "README.md"
    readme.write_text(readme.read_text() + "\nMore.\n")
    assert index.update([readme]).vectors_added == 4
    assert index.status().chunks_without_vectors == 0


def test_the_fence_keeps_files_out(tree: Path) -> None:
    write(tree / ".gitignore", "build/\n*.log\n")
    write(tree / "build/out.py", "def generated(): pass\n")
    write(tree / "debug.log", "secret token\n")
    write(tree / ".env", "API_KEY=sk-live\n")
    write(tree / "keys/server.pem", "-----BEGIN PRIVATE KEY-----\n")
    (tree / "blob.bin").write_bytes(b"\x00\x01binary")
    outside = tree.parent / "outside.py"
    write(outside, "def elsewhere(): pass\n")
    os.symlink(outside, tree / "link.py")
    write(tree / "big.py", "x = 1\n" * 200_000)
    index = SemanticIndex(Workspace([tree]), max_file_bytes=64 * 1024)
    index.update()
    indexed = paths(index)
    assert "build/out.py" not in indexed and "debug.log" not in indexed
    assert ".env" not in indexed and "keys/server.pem" not in indexed
    assert "link.py" not in indexed and ".gitignore" in indexed
    texts = " ".join(r[0] for r in index.conn.execute("SELECT text FROM chunks"))
    assert "sk-live" not in texts and "PRIVATE KEY" not in texts and "elsewhere" not in texts
    chunked = {r[0] for r in index.conn.execute(
        "SELECT DISTINCT f.path FROM chunks c JOIN files f ON f.id = c.file_id")}
    assert "blob.bin" not in chunked and "big.py" not in chunked
    # A file that becomes ignored later leaves the index on the next update of it.
    write(tree / ".gitignore", "build/\n*.log\nsrc/db.py\n")
    index.update([tree / "src/db.py"])
    assert "src/db.py" not in paths(index)


def test_old_schema_and_corrupt_files_are_rebuilt(tree: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    db = tree / ".agentls" / "index.db"
    index = SemanticIndex(Workspace([tree]))
    index.update()
    index.close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with caplog.at_level(logging.WARNING):
        reopened = SemanticIndex(Workspace([tree]))
    assert "schema version 0" in caplog.text and reopened.status().files == 0
    assert reopened.update().files_changed == 3
    reopened.close()

    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        rebuilt = SemanticIndex(Workspace([tree]))
    assert "damaged" in caplog.text
    assert rebuilt.update().files_changed == 3
    assert store.get_meta(rebuilt.conn, "schema_version") == str(store.SCHEMA_VERSION)


def test_unwritable_index_folder_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "blocked").write_text("a file where the folder should be")
    with pytest.raises(store.IndexStoreError, match="cannot create"):
        store.open_store(tmp_path / "blocked" / "index.db")


def test_embedder_change_re_embeds(tree: Path) -> None:
    index = SemanticIndex(Workspace([tree]), CountingEmbedder())
    index.update()
    index.close()
    other = CountingEmbedder()
    other.model = "letters-v2"
    reopened = SemanticIndex(Workspace([tree]), other)
    assert reopened.status().model == "letters"  # only looking changes nothing
    result = WorkspaceSearch(reopened).search("retry", 3)
    assert result.mode == "bm25" and "agentls index" in (result.warning or "")
    assert reopened.update().vectors_added == 4 and reopened.status().model == "letters-v2"


def test_provider_down_gives_lexical_results_and_a_warning(tree: Path) -> None:
    embedder = CountingEmbedder()
    index = SemanticIndex(Workspace([tree]), embedder)
    embedder.fail = True
    stats = index.update()
    assert stats.vectors_added == 0 and stats.vectors_missing == 4
    assert "connection refused" in stats.warnings[0]
    search = WorkspaceSearch(index)
    result = search.search("open database", 3)
    assert result.mode == "bm25" and "no vectors yet" in (result.warning or "")
    assert result.hits[0].symbol == "open_database"
    embedder.fail = False
    assert index.update().vectors_added == 4  # catches up once the provider is back
    assert search.search("open database", 3).mode == "hybrid"
    embedder.fail = True  # down at query time: keyword results, and the reason
    result = search.search("open database", 3)
    assert result.mode == "bm25" and "connection refused" in (result.warning or "")
    assert result.hits[0].symbol == "open_database"


def test_auto_is_keywords_only_until_the_static_model_is_built(tmp_path: Path) -> None:
    import importlib.util

    from agentls.index.embedding import static_model_dir, write_recipe_marker
    from agentls.index.from_settings import provider_name
    from agentls.settings.config import IndexConfig

    loadable = importlib.util.find_spec("model2vec") is not None
    auto = IndexConfig(embeddings="auto")
    not_shipped = tmp_path / "package" / "static_model"  # an install that built none
    assert provider_name(auto, tmp_path, not_shipped) == "none"  # never distils itself
    built = static_model_dir(tmp_path)
    built.mkdir(parents=True)
    (built / "model.safetensors").write_bytes(b"x")
    assert provider_name(auto, tmp_path, not_shipped) == "none"  # no marker: another recipe
    write_recipe_marker(built)
    assert provider_name(auto, tmp_path, not_shipped) == ("static" if loadable else "none")
    assert provider_name(IndexConfig(embeddings="static"), tmp_path) == "static"


def test_auto_uses_the_static_model_built_at_install_time(tmp_path: Path) -> None:
    import importlib.util

    from agentls.index.embedding import write_recipe_marker
    from agentls.index.from_settings import provider_name
    from agentls.settings.config import IndexConfig

    shipped = tmp_path / "package" / "static_model"
    shipped.mkdir(parents=True)
    (shipped / "model.safetensors").write_bytes(b"x")
    write_recipe_marker(shipped)
    fresh_cache = tmp_path / "empty-cache"  # a new user: nothing distilled
    expected = "static" if importlib.util.find_spec("model2vec") is not None else "none"
    assert provider_name(IndexConfig(embeddings="auto"), fresh_cache, shipped) == expected


def test_keyword_ranking_stems_skips_question_words_and_puts_tests_last(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    # The test names the behaviour in the query's own words; the code says "retries" and
    # "limited" (found by stemming); the README says "where do we" (question glue, skipped).
    write(root / "tests/test_backoff.py",
          "def test_retry_rate_limits():\n    assert retry_rate_limits()\n")
    write(root / "src/backoff.py",
          "def wait_between_retries(response):\n"
          "    '''Wait when the server says we are rate limited.'''\n    return response\n")
    write(root / "README.md", "# Notes\n\nWhere do we keep the notes? Where do we go?\n")
    index = SemanticIndex(Workspace([root]))
    index.update()
    search = WorkspaceSearch(index)
    hits = search.search("where do we retry rate limits", 5).hits
    assert [h.path for h in hits] == ["src/backoff.py", "tests/test_backoff.py"]
    # Asking for tests keeps them where BM25 puts them.
    hits = search.search("tests for retry rate limits", 5).hits
    assert hits[0].path == "tests/test_backoff.py"


@pytest.mark.parametrize(("path", "is_test"), [
    ("tests/unit/test_net.py", True), ("src/test_net.py", True), ("pkg/net_test.go", True),
    ("web/app.spec.ts", True), ("web/__tests__/app.js", True), ("conftest.py", True),
    ("src/net.py", False), ("src/testing_tools.py", False), ("docs/latest.md", False),
    ("src/test/java/NetTest.java", True), ("src/contest/entry.py", False),
])
def test_test_paths(path: str, is_test: bool) -> None:
    from agentls.index.ranking import is_test_path

    assert is_test_path(path) is is_test


def test_vectors_match_chunks_only_when_none_is_missing_or_orphaned(tree: Path) -> None:
    """A refresh that changed nothing skips looking for missing and orphaned vectors when
    the two sets are equal; each way of being unequal is seen, equal counts included."""
    index = SemanticIndex(Workspace([tree]), CountingEmbedder())
    index.update()
    conn = index.conn
    assert store.vectors_match_chunks(conn)
    some_hash = conn.execute("SELECT hash FROM chunks LIMIT 1").fetchone()[0]
    saved = conn.execute("SELECT vec FROM vectors WHERE hash = ?", (some_hash,)).fetchone()[0]
    conn.execute("DELETE FROM vectors WHERE hash = ?", (some_hash,))
    assert not store.vectors_match_chunks(conn)  # one missing
    conn.execute("INSERT INTO vectors VALUES ('orphan', ?)", (saved,))
    assert not store.vectors_match_chunks(conn)  # one missing, one orphan: equal counts
    conn.execute("INSERT INTO vectors VALUES (?, ?)", (some_hash, saved))
    assert not store.vectors_match_chunks(conn)  # one orphan
    stats = index.update()  # the full pass drops it and embeds nothing
    assert stats.vectors_added == 0 and store.vectors_match_chunks(conn)
    conn.execute("DELETE FROM vectors WHERE hash = ?", (some_hash,))
    assert index.update().vectors_added == 1 and store.vectors_match_chunks(conn)
