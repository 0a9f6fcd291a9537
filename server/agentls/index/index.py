"""The workspace index: which files it holds, keeping it current, and its status.

``update`` walks the fence (or looks at the paths it is given), re-reads a file only when
its mtime or size changed, re-chunks it only when its SHA-256 changed, drops files that
are gone, and then embeds the chunks whose text has no vector yet (an unchanged function
of an edited file, or a renamed file, keeps its vector: vectors are keyed by text hash).
Lexical rows are committed first, so a file is searchable by BM25 before its vectors exist.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agentls.index import db as store
from agentls.index import vector_file
from agentls.index.chunker import chunk_file
from agentls.index.embedding import (
    Embedder,
    EmbeddingError,
    embed_chunks,
    quantize,
)
from agentls.index.journal import ChangeJournal
from agentls.index.words import index_text, split_identifier
from agentls.workspace.fence import Workspace
from agentls.workspace.walk import resolve, visible_files

log = logging.getLogger(__name__)

INDEX_FILE = "index.db"
DEFAULT_MAX_FILE_BYTES = 512 * 1024
BATCH_FILES = 200
EMBED_BATCH = 64

Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass
class UpdateStats:
    files_seen: int = 0
    files_changed: int = 0
    files_removed: int = 0
    chunks_added: int = 0
    vectors_added: int = 0
    vectors_missing: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)


@dataclass
class Touched:
    """What a write changed: chunk texts added (text hash → the chunk's path, symbol and
    text, kept only for a targeted update, which embeds from it), text hashes dropped, chunk
    ids removed."""

    keep_texts: bool = False
    added: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)
    removed_ids: set[int] = field(default_factory=set)

    def drop(self, rows: Iterable[tuple[int, str]]) -> None:
        for chunk_id, digest in rows:
            self.removed_ids.add(chunk_id)
            self.dropped.add(digest)

    def merge(self, other: Touched) -> None:
        self.added.update(other.added)
        self.dropped |= other.dropped
        self.removed_ids |= other.removed_ids


@dataclass(frozen=True)
class IndexStatus:
    path: str
    files: int
    chunks: int
    vectors: int
    chunks_without_vectors: int
    provider: str
    model: str
    size_bytes: int
    updated_at: float | None


def index_path(workspace: Workspace) -> Path:
    return workspace.roots[0] / ".agentls" / INDEX_FILE


class SemanticIndex:
    """One workspace's index. Thread-safe: writes are short locked transactions."""

    def __init__(self, workspace: Workspace, embedder: Embedder | None = None, *,
                 path: Path | None = None, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        self.workspace = workspace
        self.embedder = embedder
        self.path = path or index_path(workspace)
        self.max_file_bytes = max_file_bytes
        self.lock = threading.RLock()
        self.conn = store.open_store(self.path)
        self.journal = ChangeJournal()  # what each write changed; readers cache by it

    @property
    def generation(self) -> int:
        return self.journal.generation

    @property
    def embedder_id(self) -> str:
        e = self.embedder
        return f"{e.provider}:{e.model}" if e is not None else "none"

    def recorded_embedder(self) -> str | None:
        """Who made the stored vectors (None: a new index)."""
        with self.lock:
            return store.get_meta(self.conn, "embedder")

    def vectors_match(self) -> bool:
        return self.recorded_embedder() in (None, self.embedder_id)

    def _check_embedder(self) -> bool:
        """Drop vectors another embedder made (the update then re-embeds everything);
        True when it did."""
        recorded = self.recorded_embedder()
        if recorded == self.embedder_id:
            return False
        with self.lock:
            if recorded is not None and recorded != "none":
                log.warning("search index vectors were made by %s, now %s: re-embedding",
                            recorded, self.embedder_id)
            with store.writing(self.conn):
                self.conn.execute("DELETE FROM vectors")
                store.set_meta(self.conn, "embedder", self.embedder_id)
            self.journal.record(everything=True)
        return True

    def close(self) -> None:
        with self.lock:
            self.conn.close()
        close = getattr(self.embedder, "close", None)  # a worker process to stop
        if close is not None:
            close()

    def rebuild(self) -> None:
        """Empty the index (files, chunks, vectors); the next update reads everything."""
        with self.lock:
            self.conn.close()
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(f"{self.path}{suffix}"):
                    os.remove(f"{self.path}{suffix}")
            self.conn = store.open_store(self.path)
            store.set_meta(self.conn, "embedder", self.embedder_id)
            self.journal.record(everything=True)

    # --- updating ---------------------------------------------------------------------------

    def update(self, paths: Iterable[Path] | None = None, *, progress: Progress | None = None,
               embed: bool = True, deadline: float | None = None,
               cancelled: Callable[[], bool] | None = None) -> UpdateStats:
        """Bring the index up to date: everything (``paths`` None) or just these files."""
        started = time.perf_counter()
        stats = UpdateStats()
        vectors_dropped = self._check_embedder()
        with self.lock:
            known = {row[0]: (row[1], row[2], row[3], row[4]) for row in self.conn.execute(
                "SELECT path, id, sha256, mtime_ns, size FROM files")}
        if paths is None:
            with self.workspace.listing():
                candidates = list(visible_files(self.workspace))
            present = {display for display, _ in candidates}
            gone = [p for p in known if p not in present]
        else:
            candidates, gone = resolve(self.workspace, paths)
        stats.files_seen = len(candidates)
        # A targeted update (paths given) looks only at the chunk texts it added or dropped
        # for vectors to make or free; a full pass scans the whole index for them.
        touched = Touched(keep_texts=True) if paths is not None and not vectors_dropped else None
        batch: list[tuple[str, Path, os.stat_result, bytes | None]] = []
        for n, (display, full) in enumerate(candidates, 1):
            if cancelled is not None and cancelled():
                break
            try:
                st = full.stat()
            except OSError:
                gone.append(display)
                continue
            old = known.get(display)
            if old is not None and old[2] == st.st_mtime_ns and old[3] == st.st_size:
                continue
            batch.append((display, full, st, None))
            if len(batch) >= BATCH_FILES:
                self._write_batch(batch, known, stats, touched)
                batch = []
            if progress is not None and n % 100 == 0:
                progress("reading", n, len(candidates))
        if batch:
            self._write_batch(batch, known, stats, touched)
        if gone:
            self._remove(gone, known, stats, touched)
        if progress is not None:
            progress("reading", len(candidates), len(candidates))
        if embed:
            self.embed_missing(stats, progress=progress, deadline=deadline, cancelled=cancelled,
                               touched=touched)
        stats.seconds = time.perf_counter() - started
        store.set_meta(self.conn, "updated_at", str(time.time()))
        return stats

    def _read(self, full: Path, st: os.stat_result) -> bytes | None:
        if st.st_size > self.max_file_bytes:
            return None
        try:
            data = full.read_bytes()
        except OSError:
            return None
        if b"\x00" in data[:8192]:
            return None  # binary
        return data

    def _write_batch(self, batch: list[tuple[str, Path, os.stat_result, bytes | None]],
                     known: dict[str, tuple[int, str, int, int]], stats: UpdateStats,
                     touched: Touched | None = None) -> None:
        prepared = []
        written = Touched(keep_texts=touched is not None)
        for display, full, st, _ in batch:
            data = self._read(full, st)
            sha = hashlib.sha256(data).hexdigest() if data is not None else ""
            chunks = None
            old = known.get(display)
            if data is not None and (old is None or old[1] != sha):
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    text = None  # not text: recorded with no chunks, so it is not re-read
                chunks = chunk_file(display, text) if text is not None else []
            prepared.append((display, st, sha, chunks))
        with self.lock:
            with store.writing(self.conn):
                for display, st, sha, chunks in prepared:
                    self._write_file(display, st, sha, chunks, known, stats, written)
            self.journal.record(written.removed_ids, written.added)
        if touched is not None:
            touched.merge(written)

    def _write_file(self, display: str, st: os.stat_result, sha: str, chunks: list | None,
                    known: dict[str, tuple[int, str, int, int]], stats: UpdateStats,
                    written: Touched) -> None:
        conn = self.conn
        old = known.get(display)
        now = time.time()
        if old is not None and chunks is None and sha:  # touched, same content
            conn.execute("UPDATE files SET mtime_ns=?, size=? WHERE id=?",
                         (st.st_mtime_ns, st.st_size, old[0]))
            return
        if old is not None:
            written.drop(store.delete_file_rows(conn, old[0]))
            conn.execute("UPDATE files SET sha256=?, mtime_ns=?, size=?, indexed_at=? WHERE id=?",
                         (sha, st.st_mtime_ns, st.st_size, now, old[0]))
            file_id = old[0]
        else:
            file_id = int(conn.execute(
                "INSERT INTO files(path, sha256, mtime_ns, size, indexed_at) VALUES (?,?,?,?,?)",
                (display, sha, st.st_mtime_ns, st.st_size, now)).lastrowid or 0)
        known[display] = (file_id, sha, st.st_mtime_ns, st.st_size)
        stats.files_changed += 1
        path_words = " ".join(w for part in display.split("/") for w in split_identifier(part))
        for chunk in chunks or []:
            digest = hashlib.sha256(chunk.text.encode("utf-8", "replace")).hexdigest()[:32]
            cur = conn.execute(
                "INSERT INTO chunks(file_id, start_line, end_line, symbol, text, hash) "
                "VALUES (?,?,?,?,?,?)",
                (file_id, chunk.start_line, chunk.end_line, chunk.symbol, chunk.text, digest))
            conn.execute("INSERT INTO chunks_fts(rowid, words, symbol, path) VALUES (?,?,?,?)",
                         (cur.lastrowid, index_text(chunk.text), index_text(chunk.symbol),
                          path_words))
            written.added.setdefault(digest, (display, chunk.symbol, chunk.text)
                                     if written.keep_texts else ("", "", ""))
            stats.chunks_added += 1

    def _remove(self, gone: list[str], known: dict[str, tuple[int, str, int, int]],
                stats: UpdateStats, touched: Touched | None = None) -> None:
        removed = Touched()
        with self.lock:
            with store.writing(self.conn):
                for display in gone:
                    old = known.pop(display, None)
                    if old is None:
                        continue
                    removed.drop(store.delete_file_rows(self.conn, old[0]))
                    self.conn.execute("DELETE FROM files WHERE id = ?", (old[0],))
                    stats.files_removed += 1
            self.journal.record(removed.removed_ids)
        if touched is not None:
            touched.merge(removed)

    def embed_missing(self, stats: UpdateStats | None = None, *,
                      progress: Progress | None = None, deadline: float | None = None,
                      cancelled: Callable[[], bool] | None = None,
                      touched: Touched | None = None) -> UpdateStats:
        """Embed every chunk text that has no vector yet (until ``deadline``, a
        ``time.monotonic()`` value), then drop vectors no chunk uses. With ``touched`` (what
        a targeted update added and dropped) only those texts are looked at, so an edit
        costs its own chunks, not a scan of the index; a full pass whose vectors already
        match the chunk texts looks no further."""
        stats = stats or UpdateStats()
        # A full pass lists the chunks to embed by id and reads their texts a batch at a
        # time (all of them at once held 70 MB more at 120,000 chunks); a targeted update
        # has them in ``touched``.
        ids: list[int] = []
        missing: list[tuple[str, tuple[str, str, str]]] = []
        complete = False  # every chunk text has its vector and every vector a chunk
        if self.embedder is not None:  # keywords only: no scan of every chunk for nothing
            with self.lock:
                if touched is None and store.vectors_match_chunks(self.conn):
                    complete = True
                elif touched is None:
                    ids = store.chunks_without_vectors(self.conn)
                elif touched.added:
                    have = store.hashes_with_vectors(self.conn, list(touched.added))
                    missing = [(h, t) for h, t in touched.added.items() if h not in have]
        total = len(ids) or len(missing)
        if self.embedder is not None:
            for start in range(0, total, EMBED_BATCH):
                if (cancelled is not None and cancelled()) or (
                        deadline is not None and time.monotonic() > deadline):
                    break
                if ids:
                    with self.lock:
                        part = store.chunk_texts(self.conn, ids[start:start + EMBED_BATCH])
                else:
                    part = missing[start:start + EMBED_BATCH]
                try:
                    vectors = embed_chunks(self.embedder, [chunk for _, chunk in part])
                except EmbeddingError as exc:
                    stats.warnings.append(f"embedding stopped ({exc}); search uses BM25 for "
                                          "the chunks without vectors")
                    break
                rows = list(zip((h for h, _ in part), quantize(vectors), strict=True))
                with self.lock:
                    # One transaction a batch: alone, each row was a commit of its own.
                    with store.writing(self.conn):
                        self.conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                                              rows)
                    self.journal.record(dirty=(h for h, _ in part))
                stats.vectors_added += len(rows)
                if progress is not None:
                    progress("embedding", min(start + EMBED_BATCH, total), total)
        stats.vectors_missing = total - stats.vectors_added if self.embedder else 0
        if not complete:
            with self.lock:
                # Vectors no chunk uses are in no reader's copy: nothing to record.
                store.drop_orphan_vectors(self.conn,
                                          None if touched is None else touched.dropped)
        return stats

    # --- status -----------------------------------------------------------------------------

    def status(self) -> IndexStatus:
        with self.lock:
            one = self.conn.execute
            files = one("SELECT count(*) FROM files").fetchone()[0]
            chunks = one("SELECT count(*) FROM chunks").fetchone()[0]
            vectors = one("SELECT count(*) FROM vectors").fetchone()[0]
            bare = one("SELECT count(*) FROM chunks c LEFT JOIN vectors v ON v.hash = c.hash "
                       "WHERE v.hash IS NULL").fetchone()[0]
            updated = store.get_meta(self.conn, "updated_at")
        size = sum(os.path.getsize(p) for p in (f"{self.path}", f"{self.path}-wal",
                                                  vector_file.path_beside(self.path))
                   if os.path.exists(p))
        provider, _, model = (self.recorded_embedder() or self.embedder_id).partition(":")
        return IndexStatus(str(self.path), files, chunks, vectors,
                           bare if provider != "none" else 0, provider, model, size,
                           float(updated) if updated else None)
