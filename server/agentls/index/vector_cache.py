"""Every chunk's vector in memory, as one int8 matrix, kept in step with the index.

The index stores int8 (a quarter of the size of float32), and so does the cache: a query's
products are taken a block of rows at a time, each block widened to float32 in a small
buffer that stays in the CPU's cache (``scores``). Widening the whole matrix once at load
(120 MB at 120,000 chunks of 256 dimensions) cost a cold search 0.3-1.3 s here in fresh
memory alone, and numpy's own int8 product widens all of it on every query (47 ms against
16 ms for the float32 product); the blocks cost less than either, with the same scores.

A new process reads the matrix from its copy beside the index when that copy is current
(``vector_file.py``), else from the index's rows (and saves the copy).

After a write the cache applies what the index's journal says changed (``journal.py``):
removed chunks become tombstones (id -1, a zero row, never ranked), chunks that gained a
vector are appended into spare rows. An edit so costs its own chunks, not a reload of the
index. It reloads when the journal cannot say what changed, and when tombstones pass a
quarter of the rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentls.index import db as store
from agentls.index import vector_file

if TYPE_CHECKING:
    import numpy as np

    from agentls.index.index import SemanticIndex
    from agentls.index.journal import Change

SPARE = 0.125  # rows allocated past the loaded ones, so appends rarely copy the matrix
TOMBSTONE = -1
BLOCK_ROWS = 1024  # rows widened at a time: 1 MiB of float32 at 256 dimensions


def _capacity(rows: int) -> int:
    return rows + max(64, int(rows * SPARE))


def _arrays(rows: list[tuple[int, bytes]]) -> tuple[np.ndarray, np.ndarray]:
    """(ids, int8 matrix) of ``rows`` (chunk id, vector bytes), with spare rows after them."""
    import numpy as np

    width = len(rows[0][1])
    capacity = _capacity(len(rows))
    ids = np.full(capacity, TOMBSTONE, dtype=np.int64)
    ids[:len(rows)] = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.zeros((capacity, width), dtype=np.int8)
    matrix[:len(rows)] = np.frombuffer(b"".join(r[1] for r in rows),
                                       dtype=np.int8).reshape(len(rows), width)
    return ids, matrix


def scores(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``matrix`` (int8 rows) times ``query`` (float32), as float32: the same numbers as
    ``matrix.astype(np.float32) @ query``, without widening the whole matrix."""
    import numpy as np

    out = np.empty(len(matrix), dtype=np.float32)
    block = np.empty((min(BLOCK_ROWS, len(matrix)), matrix.shape[1]), dtype=np.float32)
    for start in range(0, len(matrix), BLOCK_ROWS):
        rows = matrix[start:start + BLOCK_ROWS]
        widened = block[:len(rows)]
        np.copyto(widened, rows, casting="unsafe")
        np.matmul(widened, query, out=out[start:start + len(rows)])
    return out


class VectorCache:
    """The vectors of one index, reloaded or patched when the index changes."""

    def __init__(self) -> None:
        self._generation = -1
        self._ids: np.ndarray | None = None  # capacity-sized; rows past ``_rows`` are spare
        self._matrix: np.ndarray | None = None
        self._rows = 0
        self.tombstones = 0
        self.reloads = 0  # full loads so far (tests and benchmarks read it)
        self.copies_read = 0  # of those, read from the copy beside the index

    def load(self, index: SemanticIndex) -> tuple[np.ndarray, np.ndarray] | None:
        """(chunk ids, int8 vectors) as of the index's current generation; None when it has
        no vectors. Ids of removed chunks are ``TOMBSTONE``."""
        with index.lock:
            if self._generation != index.generation or self._matrix is None:
                change = None if self._matrix is None else index.journal.since(
                    self._generation)
                if change is None or not self._patch(index, change):
                    self._reload(index)
                self._generation = index.generation
            if self._ids is None or self._matrix is None or self._rows == self.tombstones:
                return None
            return self._ids[:self._rows], self._matrix[:self._rows]

    def _reload(self, index: SemanticIndex) -> None:
        """Every vector afresh: from the copy beside the index when it is current
        (``vector_file.py``), else from the index's rows (and the copy saved again)."""
        self.reloads += 1
        self._ids, self._matrix, self._rows, self.tombstones = None, None, 0, 0
        copy = vector_file.path_beside(index.path)
        index.conn.execute("BEGIN")  # the stamp and the rows of one state of the store
        try:
            stamp = store.stamp(index.conn)
            saved = None if stamp is None else vector_file.load(copy, stamp, _capacity)
            if saved is None:
                rows = self._read_rows(index)
        finally:
            index.conn.execute("COMMIT")
        if saved is not None:
            self._ids, self._matrix, self._rows = saved
            self.copies_read += 1
            return
        if not rows:
            return
        ids, matrix = _arrays(rows)
        self._ids, self._matrix, self._rows = ids, matrix, len(rows)
        if stamp is not None:
            vector_file.save(copy, stamp, ids[:len(rows)], matrix[:len(rows)])

    @staticmethod
    def _read_rows(index: SemanticIndex) -> list[tuple[int, bytes]]:
        # Two scans joined here, not a JOIN in SQL: the JOIN looks up every chunk's hash in
        # the vectors' index (0.5 s at 120,000 chunks against 0.15 s). Rows in hash order,
        # as that JOIN gave them.
        vectors = dict(index.conn.execute("SELECT hash, vec FROM vectors"))
        return [(chunk_id, vec) for chunk_id, digest in index.conn.execute(
            "SELECT id, hash FROM chunks ORDER BY hash")
            if (vec := vectors.get(digest)) is not None]

    def _patch(self, index: SemanticIndex, change: Change) -> bool:
        """Apply ``change``; False when a reload is the better way."""
        import numpy as np

        if self._ids is None or self._matrix is None:
            return False
        live = self._ids[:self._rows]
        if change.removed:
            gone = np.isin(live, np.fromiter(change.removed, dtype=np.int64,
                                             count=len(change.removed)))
            count = int(gone.sum())
            if count:
                live[gone] = TOMBSTONE
                self._matrix[:self._rows][gone] = 0.0
                self.tombstones += count
        if change.dirty:
            fresh = store.vectors_of(index.conn, list(change.dirty))
            if fresh:
                ids = np.fromiter((r[0] for r in fresh), dtype=np.int64, count=len(fresh))
                new = ~np.isin(ids, live)  # a chunk already held keeps its row
                if new.any():
                    rows = [r[1] for r, keep in zip(fresh, new, strict=True) if keep]
                    if not self._append(ids[new], rows):
                        return False
        return self.tombstones * 4 <= self._rows

    def _append(self, ids: np.ndarray, blobs: list[bytes]) -> bool:
        import numpy as np

        assert self._ids is not None and self._matrix is not None
        width = self._matrix.shape[1]
        if any(len(b) != width for b in blobs):
            return False  # another embedder's vectors: reload
        end = self._rows + len(ids)
        if end > len(self._ids):
            return False  # out of spare rows: a reload sizes the matrix anew
        self._ids[self._rows:end] = ids
        self._matrix[self._rows:end] = np.frombuffer(b"".join(blobs), dtype=np.int8).reshape(
            len(ids), width)
        self._rows = end
        return True
