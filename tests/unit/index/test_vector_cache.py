"""The vector cache patched from the index's journal holds exactly what a reload would; a
reload holds what the index stores; its products are the float32 product's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.unit.index.test_semantic_index import CountingEmbedder, write

from agentls.index import db as store
from agentls.index import vector_file
from agentls.index.index import SemanticIndex
from agentls.index.service import WorkspaceSearch
from agentls.index.vector_cache import BLOCK_ROWS, TOMBSTONE, VectorCache, scores
from agentls.workspace.fence import Workspace


def held(cache: VectorCache, index: SemanticIndex) -> dict[int, bytes]:
    loaded = cache.load(index)
    if loaded is None:
        return {}
    ids, matrix = loaded
    return {int(i): matrix[n].astype(np.int8).tobytes()
            for n, i in enumerate(ids) if i != TOMBSTONE}


def fresh(index: SemanticIndex) -> dict[int, bytes]:
    return held(VectorCache(), index)


def test_edits_patch_the_cache_to_what_a_reload_holds(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for n in range(40):
        write(root / f"m{n}.py", "".join(f"def f{n}_{k}(x):\n    return x * {k}\n\n\n"
                                         for k in range(3)))
    index = SemanticIndex(Workspace([root]), CountingEmbedder())
    search = WorkspaceSearch(index)
    search.update()
    assert held(search.cache, index) == fresh(index) and search.cache.reloads == 1

    edited = root / "m1.py"
    edited.write_text(edited.read_text() + "def retry_rate_limits(call):\n    return call()\n")
    search.update([edited])
    assert held(search.cache, index) == fresh(index)
    (root / "m2.py").rename(root / "renamed.py")
    search.update([root / "m2.py", root / "renamed.py"])
    assert held(search.cache, index) == fresh(index)
    (root / "m3.py").unlink()
    search.update([root / "m3.py"])
    assert held(search.cache, index) == fresh(index)
    assert search.cache.reloads == 1  # three edits, no reload
    assert search.cache.tombstones > 0

    hits = search.search("retry rate limits", 3).hits
    assert hits[0].symbol == "retry_rate_limits"
    assert all(h.path != "m3.py" for h in search.search("f3 return x", 20).hits)

    # Many deletions: past a quarter of tombstones the cache reloads (and compacts).
    for n in range(10, 22):
        (root / f"m{n}.py").unlink()
    search.update([root / f"m{n}.py" for n in range(10, 22)])
    assert held(search.cache, index) == fresh(index)
    assert search.cache.reloads == 2 and search.cache.tombstones == 0


def test_a_forgotten_or_reset_journal_reloads(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / "a.py", "def a():\n    return 1\n")
    index = SemanticIndex(Workspace([root]), CountingEmbedder())
    search = WorkspaceSearch(index)
    search.update()
    held(search.cache, index)
    index.journal.record(everything=True)
    held(search.cache, index)
    assert search.cache.reloads == 2
    write(root / "b.py", "def b():\n    return 2\n")
    search.update([root / "b.py"])
    index.journal._entries.clear()  # forgotten (bounded journal)
    assert held(search.cache, index) == fresh(index) and search.cache.reloads == 3


def test_a_reload_holds_every_chunk_s_stored_vector_in_hash_order(tmp_path: Path) -> None:
    """The two scans joined in Python give the rows SQL's JOIN gives, chunks sharing a text
    (hence a vector) included."""
    root = tmp_path / "repo"
    for n in range(30):
        write(root / f"m{n}.py", f"def f{n}(x):\n    return x * {n}\n\n\n"
                                 "def same(x):\n    return x\n")
    index = SemanticIndex(Workspace([root]), CountingEmbedder())
    WorkspaceSearch(index).update()
    joined = index.conn.execute("SELECT c.id, v.vec FROM chunks c JOIN vectors v "
                                "ON v.hash = c.hash ORDER BY c.hash, c.id").fetchall()
    loaded = VectorCache().load(index)
    assert loaded is not None
    ids, matrix = loaded
    assert [int(i) for i in ids] == [r[0] for r in joined]
    assert [row.tobytes() for row in matrix] == [r[1] for r in joined]
    assert len({r[1] for r in joined}) < len(joined)  # the shared text has one vector


def test_block_products_rank_as_the_float32_product() -> None:
    """Widening a block at a time gives the float32 product's scores, to its rounding (BLAS
    splits rows between its threads by the matrix's size, so the whole product's last bits
    already depended on it), and the same ranking."""
    rng = np.random.default_rng(40)
    for rows in (1, BLOCK_ROWS - 1, BLOCK_ROWS * 5 + 37, 30_000):
        matrix = rng.integers(-127, 128, size=(rows, 256), dtype=np.int8)
        query = rng.standard_normal(256).astype(np.float32)
        query /= np.linalg.norm(query)
        blocked, whole = scores(matrix, query), matrix.astype(np.float32) @ query
        assert np.allclose(blocked, whole, rtol=1e-6, atol=1e-5)
        top = min(50, rows)
        assert list(np.argsort(-blocked, kind="stable")[:top]) == list(
            np.argsort(-whole, kind="stable")[:top])


def _repo(tmp_path: Path, files: int = 12) -> Path:
    root = tmp_path / "repo"
    for n in range(files):
        write(root / f"m{n}.py", f"def f{n}(x):\n    return x * {n}\n\n\ndef g{n}():\n    pass\n")
    return root


def test_a_new_process_reads_the_current_copy_and_holds_what_the_index_stores(
        tmp_path: Path) -> None:
    """The copy beside the index (vector_file.py) is written by the load from SQLite and
    read by the next new cache while the index is unchanged: the same rows, and room to
    append as after a load from SQLite."""
    root = _repo(tmp_path)
    index = SemanticIndex(Workspace([root]), CountingEmbedder())
    search = WorkspaceSearch(index)
    search.update()
    first = VectorCache()
    from_sql = held(first, index)
    assert first.copies_read == 0 and vector_file.path_beside(index.path).exists()
    second = VectorCache()
    assert held(second, index) == from_sql and second.copies_read == 1
    # The copy's arrays take edits as a load from SQLite's do.
    write(root / "new.py", "def added_later():\n    return 7\n")
    search.update([root / "new.py"])
    assert held(second, index) == fresh(index) and second.reloads == 1


def test_any_write_makes_the_copy_stale(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    index = SemanticIndex(Workspace([root]), CountingEmbedder())
    search = WorkspaceSearch(index)
    search.update()
    search.save_vectors()
    for change in (lambda: write(root / "m1.py", "def changed():\n    return 0\n"),
                   lambda: (root / "m2.py").rename(root / "moved.py"),
                   lambda: (root / "m3.py").unlink()):
        stamp = store.stamp(index.conn)
        change()
        search.update()
        assert store.stamp(index.conn) != stamp
        stale_read = VectorCache()
        assert held(stale_read, index) == dict(_sql_rows(index)) and stale_read.copies_read == 0
        again = VectorCache()  # the load from SQLite saved the copy anew
        assert held(again, index) == dict(_sql_rows(index)) and again.copies_read == 1


def _sql_rows(index: SemanticIndex) -> list[tuple[int, bytes]]:
    return index.conn.execute("SELECT c.id, v.vec FROM chunks c JOIN vectors v "
                              "ON v.hash = c.hash").fetchall()


def test_a_rolled_back_write_counts_nothing_a_rebuilt_index_is_another_store(
        tmp_path: Path) -> None:
    root = _repo(tmp_path, 2)
    index = SemanticIndex(Workspace([root]), CountingEmbedder())
    WorkspaceSearch(index).update()
    stamp = store.stamp(index.conn)
    try:
        with store.writing(index.conn):
            index.conn.execute("DELETE FROM vectors")
            raise RuntimeError("midway")
    except RuntimeError:
        pass
    assert store.stamp(index.conn) == stamp and fresh(index)
    index.rebuild()
    assert store.stamp(index.conn) != stamp


def test_a_damaged_or_foreign_copy_is_not_read(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    index = SemanticIndex(Workspace([root]), CountingEmbedder())
    WorkspaceSearch(index).update()
    expected = fresh(index)
    copy = vector_file.path_beside(index.path)
    whole = copy.read_bytes()
    for damaged in (whole[:len(whole) // 2], b"not json\n" + whole, b""):
        copy.write_bytes(damaged)
        cache = VectorCache()
        assert held(cache, index) == expected and cache.copies_read == 0
    # Another store's copy (same shape, another stamp) is not read either.
    header, _, body = whole.partition(b"\n")
    copy.write_bytes(header.replace(b'"stamp": "', b'"stamp": "other') + b"\n" + body)
    cache = VectorCache()
    assert held(cache, index) == expected and cache.copies_read == 0


def test_an_unwritable_folder_keeps_search_working(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    root = _repo(tmp_path)
    index = SemanticIndex(Workspace([root]), CountingEmbedder())
    WorkspaceSearch(index).update()

    def refused(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(vector_file.os, "replace", refused)
    cache = VectorCache()
    assert held(cache, index) == dict(_sql_rows(index))
    assert "cannot save the vectors' copy" in caplog.text
    assert not vector_file.path_beside(index.path).exists()
    assert not list(index.path.parent.glob(".vectors.bin.*"))  # no half file left
