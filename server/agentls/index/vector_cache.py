"""Every chunk's vector in memory, as one float32 matrix, kept in step with the index.

The index stores int8 (a quarter of the size on disk); in memory the vectors are widened
once, at load, because a product with an int8 matrix widens all of it on every query (47 ms
against 16 ms at 120,000 chunks of 256 dimensions, for 4 bytes a dimension of memory: 120 MB
at that size).

After a write the cache applies what the index's journal says changed (``changes.py``):
removed chunks become tombstones (id -1, a zero row, never ranked), chunks that gained a
vector are appended into spare rows. An edit so costs its own chunks, not a reload of the
index. It reloads when the journal cannot say what changed, and when tombstones pass a
quarter of the rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentls.index import db as store

if TYPE_CHECKING:
    import numpy as np

    from agentls.index.index import SemanticIndex
    from agentls.index.journal import Change

SPARE = 0.125  # rows allocated past the loaded ones, so appends rarely copy the matrix
TOMBSTONE = -1


class VectorCache:
    """The vectors of one index, reloaded or patched when the index changes."""

    def __init__(self) -> None:
        self._generation = -1
        self._ids: np.ndarray | None = None  # capacity-sized; rows past ``_rows`` are spare
        self._matrix: np.ndarray | None = None
        self._rows = 0
        self.tombstones = 0
        self.reloads = 0  # full loads so far (tests and benchmarks read it)

    def load(self, index: SemanticIndex) -> tuple[np.ndarray, np.ndarray] | None:
        """(chunk ids, vectors) as of the index's current generation; None when it has no
        vectors. Ids of removed chunks are ``TOMBSTONE``."""
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
        import numpy as np

        self.reloads += 1
        rows = index.conn.execute(
            "SELECT c.id, v.vec FROM chunks c JOIN vectors v ON v.hash = c.hash").fetchall()
        self._ids, self._matrix, self._rows, self.tombstones = None, None, 0, 0
        if not rows:
            return
        width = len(rows[0][1])
        capacity = len(rows) + max(64, int(len(rows) * SPARE))
        self._ids = np.full(capacity, TOMBSTONE, dtype=np.int64)
        self._ids[:len(rows)] = np.fromiter((r[0] for r in rows), dtype=np.int64,
                                            count=len(rows))
        self._matrix = np.zeros((capacity, width), dtype=np.float32)
        self._matrix[:len(rows)] = np.frombuffer(b"".join(r[1] for r in rows),
                                                 dtype=np.int8).reshape(len(rows), width)
        self._rows = len(rows)

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
