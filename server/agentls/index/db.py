"""The SQLite file behind the index: schema, opening (and rebuilding), row access.

``.agentls/index.db`` in WAL mode. ``files`` and ``chunks`` hold what was indexed;
``chunks_fts`` (FTS5, rowid = chunk id) holds a pre-split copy of each chunk's text and
symbol and its path (see ``words.py``), stemmed by FTS5's porter tokenizer; ``vectors``
holds one int8 vector per distinct chunk text, keyed by its hash, so unchanged chunks of an
edited file and renamed files keep theirs.
``meta`` records the schema version, which embedder made the vectors, the store's id (new
with every file made) and how many writes it has had: together its ``stamp``, which says
whether a copy made from it (``vector_file.py``) is current. Every write goes through
``writing``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

# 2: the FTS5 words are stemmed (porter), so "limits" finds "limit" and "retried" "retry".
# 3: vectors are made from the chunk's path and symbol above its text (embedding_input).
# 4: the chunker names functions made by assignment (``Foo.prototype.bar = function``),
#    C++ templates, namespaces and functions, Rust macros: files must be chunked again.
SCHEMA_VERSION = 4
_SLICE = 500  # keys per IN (...): under SQLite's bound-parameter limit everywhere

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    sha256 TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    indexed_at REAL NOT NULL
);
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    symbol TEXT NOT NULL,
    text TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX chunks_file ON chunks(file_id);
CREATE INDEX chunks_hash ON chunks(hash);
CREATE VIRTUAL TABLE chunks_fts USING fts5(words, symbol, path, tokenize = 'porter unicode61');
CREATE TABLE vectors (hash TEXT PRIMARY KEY, vec BLOB NOT NULL);
"""


class IndexStoreError(Exception):
    """The index file cannot be opened or written (a person has to act)."""


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def _version(conn: sqlite3.Connection) -> int | None:
    try:
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.OperationalError:
        return None
    return int(row[0]) if row else None


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(f"{path}{suffix}")


def open_store(path: Path) -> sqlite3.Connection:
    """Open the index at ``path``, creating it; a corrupt or old-schema file is rebuilt."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise IndexStoreError(f"cannot create {path.parent}: {exc.strerror or exc}; check the "
                              "folder's permissions") from exc
    reason = None
    if path.exists():
        try:
            conn = _connect(path)
            version = _version(conn)
            if version == SCHEMA_VERSION:
                conn.execute("SELECT count(*) FROM chunks_fts WHERE rowid = 0").fetchone()
                if get_meta(conn, "store_id") is None:  # made before stores had an id
                    set_meta(conn, "store_id", os.urandom(8).hex())
                return conn
            conn.close()
            reason = f"schema version {version} (this agentls writes {SCHEMA_VERSION})"
        except sqlite3.DatabaseError as exc:
            reason = f"it is damaged ({exc})"
            with contextlib.suppress(Exception):
                conn.close()
        log.warning("rebuilding the search index %s: %s", path, reason)
        _remove(path)
    try:
        conn = _connect(path)
        conn.executescript(_SCHEMA)
        conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        conn.execute("INSERT INTO meta VALUES ('store_id', ?)", (os.urandom(8).hex(),))
    except sqlite3.Error as exc:
        raise IndexStoreError(f"cannot create the search index {path}: {exc}; check the disk "
                              "space and the folder's permissions") from exc
    return conn


@contextlib.contextmanager
def writing(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, counted in ``meta.writes``: whole or rolled back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("INSERT INTO meta VALUES ('writes', '1') ON CONFLICT(key) "
                     "DO UPDATE SET value = CAST(value AS INTEGER) + 1")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def stamp(conn: sqlite3.Connection) -> str | None:
    """This state of the store (its id, its writes, the embedder); None for a store made
    before stores had an id (read from SQLite then, never from a copy)."""
    meta = dict(conn.execute(
        "SELECT key, value FROM meta WHERE key IN ('store_id', 'writes', 'embedder')"))
    if "store_id" not in meta:
        return None
    return f"{meta['store_id']}:{meta.get('writes', '0')}:{meta.get('embedder', '')}"


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return str(row[0]) if row else None


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


def delete_file_rows(conn: sqlite3.Connection, file_id: int) -> list[tuple[int, str]]:
    """Drop a file's chunks and their FTS rows (the caller then drops or reuses the file);
    returns the (id, text hash) of each dropped chunk."""
    rows = [(int(r[0]), str(r[1])) for r in conn.execute(
        "SELECT id, hash FROM chunks WHERE file_id = ?", (file_id,))]
    conn.execute("DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE file_id=?)",
                 (file_id,))
    conn.execute("DELETE FROM chunks WHERE file_id = ?", (file_id,))
    return rows


def hashes_with_vectors(conn: sqlite3.Connection, hashes: Sequence[str]) -> set[str]:
    """Which of ``hashes`` have a vector (looked up by key, in slices SQLite accepts)."""
    found: set[str] = set()
    for start in range(0, len(hashes), _SLICE):
        part = hashes[start:start + _SLICE]
        found.update(row[0] for row in conn.execute(
            f"SELECT hash FROM vectors WHERE hash IN ({','.join('?' * len(part))})", part))
    return found


def vectors_of(conn: sqlite3.Connection, hashes: Sequence[str]) -> list[tuple[int, bytes]]:
    """(chunk id, vector) of every chunk whose text hash is in ``hashes`` and has a vector."""
    out: list[tuple[int, bytes]] = []
    for start in range(0, len(hashes), _SLICE):
        part = hashes[start:start + _SLICE]
        out.extend(conn.execute(
            "SELECT c.id, v.vec FROM vectors v JOIN chunks c ON c.hash = v.hash "
            f"WHERE v.hash IN ({','.join('?' * len(part))})", part))
    return out


def chunks_without_vectors(conn: sqlite3.Connection) -> list[int]:
    """One chunk id (the first) for each chunk text that has no vector, in id order."""
    return [int(r[0]) for r in conn.execute(
        "SELECT min(c.id) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM vectors v "
        "WHERE v.hash = c.hash) GROUP BY c.hash ORDER BY 1")]


def chunk_texts(conn: sqlite3.Connection, ids: Sequence[int]
                ) -> list[tuple[str, tuple[str, str, str]]]:
    """(text hash, (path, symbol, text)) of the chunks ``ids`` that still exist, in their
    order."""
    rows: dict[int, tuple[str, tuple[str, str, str]]] = {}
    for start in range(0, len(ids), _SLICE):
        part = list(ids[start:start + _SLICE])
        rows.update((r[0], (r[1], (r[2], r[3], r[4]))) for r in conn.execute(
            "SELECT c.id, c.hash, f.path, c.symbol, c.text FROM chunks c JOIN files f "
            f"ON f.id = c.file_id WHERE c.id IN ({','.join('?' * len(part))})", part))
    return [rows[i] for i in ids if i in rows]


def vectors_match_chunks(conn: sqlite3.Connection) -> bool:
    """Whether the vectors are exactly those of the chunk texts: none missing, none that no
    chunk uses. Two sorted scans of covering indexes (0.15 s at 120,000 chunks), where
    looking for the missing and the orphaned costs a lookup per row each (0.7 s): a refresh
    that changed nothing skips both."""
    vectors = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
    texts = conn.execute("SELECT count(DISTINCT hash) FROM chunks").fetchone()[0]
    if vectors != texts:
        return False
    return bool(conn.execute("SELECT DISTINCT hash FROM chunks ORDER BY hash").fetchall()
                == conn.execute("SELECT hash FROM vectors ORDER BY hash").fetchall())


def drop_orphan_vectors(conn: sqlite3.Connection, candidates: Iterable[str] | None = None
                        ) -> int:
    """Drop vectors no chunk uses: among ``candidates`` (hashes just dropped), or all."""
    orphan = "NOT EXISTS (SELECT 1 FROM chunks c WHERE c.hash = vectors.hash)"
    if candidates is None:
        return conn.execute(f"DELETE FROM vectors WHERE {orphan}").rowcount
    hashes = list(candidates)
    removed = 0
    for start in range(0, len(hashes), _SLICE):
        part = hashes[start:start + _SLICE]
        removed += conn.execute(
            f"DELETE FROM vectors WHERE hash IN ({','.join('?' * len(part))}) AND {orphan}",
            part).rowcount
    return removed
