"""Hybrid search over the index: BM25 (FTS5) always, cosine over vectors when an embedder
is set, fused by their scores (each min-max normalised over its candidates, then summed;
``fuse_scores``); keyword-only results keep reciprocal rank fusion (``fuse``). An embedder
that fails gives BM25 results and a warning, never an error."""

from __future__ import annotations

import logging
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from agentls.index.embedding import EmbeddingError
from agentls.index.ranking import Candidate, queried_symbols, rank_files
from agentls.index.vector_cache import TOMBSTONE, scores
from agentls.index.words import code_words, match_query

if TYPE_CHECKING:

    from agentls.index.index import SemanticIndex
    from agentls.index.rerank import Reranker
    from agentls.index.vector_cache import VectorCache

log = logging.getLogger(__name__)

RRF_K = 10  # smaller than the usual 60: the top of each ranking counts more
# Weight of the BM25 scores against the cosines (1.0) in the fusion. On the code-search
# benchmark's real repositories equal weights do better than 0.5 or 0.25 (nDCG@10 0.880 ->
# 0.872 at 0.5; docs/SEMANTIC_SEARCH.md has figures).
BM25_WEIGHT = 1.0
CANDIDATES = 50  # from each ranking before fusion
SNIPPET_LINES = 12
# BM25 column weights: chunk words, symbol words, path words.
BM25_WEIGHTS = (1.0, 3.0, 1.5)
# A symbol query also looks up the chunks that define the symbol, at most this many.
DEFINITIONS_LOOKED_UP = 20
DEFINITION_ROWS = 500  # chunks whose symbol holds the name's word, searched for the exact name


@dataclass(frozen=True)
class Hit:
    path: str
    start_line: int
    end_line: int
    symbol: str
    score: float
    snippet: str
    match: str  # "bm25", "vector" or "both"
    # The file's other matching chunks, best first: (start line, end line, symbol).
    also: tuple[tuple[int, int, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def spans(self) -> list[tuple[int, int, str]]:
        """(start line, end line, symbol) of the hit's chunk, then of the file's others."""
        return [(self.start_line, self.end_line, self.symbol), *self.also]


@dataclass(frozen=True)
class SearchResult:
    hits: list[Hit]
    mode: str  # "hybrid" or "bm25"
    warning: str | None
    seconds: float
    reranked_by: str | None = None  # the model that re-ordered the first candidates


def bm25_ranking(conn: sqlite3.Connection, query: str,
                 limit: int = CANDIDATES) -> list[tuple[int, float]]:
    """(chunk id, BM25 score: higher is better), best first."""
    expression = match_query(query)
    if expression is None:
        return []
    w = BM25_WEIGHTS
    bm25 = f"bm25(chunks_fts, {w[0]}, {w[1]}, {w[2]})"
    rows = conn.execute(
        f"SELECT rowid, -{bm25} FROM chunks_fts WHERE chunks_fts MATCH ? "
        f"ORDER BY {bm25} LIMIT ?", (expression, limit))
    return [(int(r[0]), float(r[1])) for r in rows]


@dataclass(frozen=True)
class VectorRanking:
    scored: list[tuple[int, float]]  # (chunk id, cosine), best first
    chunks: int  # the chunks with a vector in the index: what the candidates are a share of


def vector_ranking(index: SemanticIndex, cache: VectorCache, query: str,
                   limit: int = CANDIDATES) -> VectorRanking | None:
    """Chunk ids by cosine similarity; None when the index holds no vectors yet."""
    import numpy as np

    assert index.embedder is not None
    loaded = cache.load(index)
    if loaded is None:
        return None
    ids, matrix = loaded
    q = index.embedder.embed([query])[0]
    similarity = scores(matrix, q.astype(np.float32))
    if cache.tombstones:
        similarity[ids == TOMBSTONE] = -np.inf  # removed chunks are never ranked
    live = len(similarity) - cache.tombstones
    top = min(limit, live)
    best = np.argpartition(-similarity, top - 1)[:top]
    best = best[np.argsort(-similarity[best])]
    return VectorRanking([(int(ids[i]), float(similarity[i])) for i in best], live)


_VECTOR_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentls-vectors")


def fuse(rankings: list[tuple[list[int], float]]) -> list[tuple[int, float]]:
    """Weighted reciprocal rank fusion of (ranking, weight) pairs."""
    scores: dict[int, float] = {}
    for ranking, weight in rankings:
        for rank, chunk_id in enumerate(ranking, 1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (RRF_K + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


def fuse_scores(rankings: list[tuple[list[tuple[int, float]], float]]) -> list[tuple[int, float]]:
    """Score fusion of (ranking as (chunk id, score) pairs, weight): each ranking's scores
    min-max normalised over its candidates (the best 1, the last 0; all 1 when they are
    equal), weighted and summed. Unlike reciprocal ranks, a candidate far behind the best
    by cosine stays far behind (measured on the benchmark and the labelled sets)."""
    fused: dict[int, float] = {}
    for scored, weight in rankings:
        if not scored:
            continue
        low = min(score for _, score in scored)
        span = max(score for _, score in scored) - low
        for chunk_id, score in scored:
            share = (score - low) / span if span > 0 else 1.0
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight * share
    return sorted(fused.items(), key=lambda item: -item[1])


def _snippet(text: str, start_line: int, query: str) -> str:
    """The chunk's lines around the first line that shares a word with the query."""
    lines = text.splitlines()
    wanted = set(code_words(query))
    first = next((i for i, line in enumerate(lines) if wanted & set(code_words(line))), 0)
    lo = max(0, min(first - 2, len(lines) - SNIPPET_LINES))
    part = lines[lo:lo + SNIPPET_LINES]
    return "\n".join(f"{start_line + lo + i}: {line}" for i, line in enumerate(part))


def search(index: SemanticIndex, cache: VectorCache, query: str, top_k: int = 8,
           *, lexical_only: bool = False, reranker: Reranker | None = None) -> SearchResult:
    started = time.perf_counter()
    warning = None
    wants_vectors = index.embedder is not None and not lexical_only
    matches = wants_vectors and index.vectors_match()
    hybrid = wants_vectors and matches
    # The query's embedding and the matrix product release the GIL, as SQLite's FTS5 does:
    # the vector side runs in a thread while BM25 runs here.
    pending = _VECTOR_POOL.submit(vector_ranking, index, cache, query) if hybrid else None
    with index.lock:
        lexical = bm25_ranking(index.conn, query)
    vector = VectorRanking([], 0)
    mode = "bm25"
    if wants_vectors and not matches:
        warning = (f"the index's vectors were made by {index.recorded_embedder()}, not "
                   f"{index.embedder_id}; these are keyword (BM25) results until the index is "
                   "refreshed (`agentls index`)")
    elif pending is not None:
        try:
            ranked = pending.result()
            if ranked is None:
                warning = ("the index has no vectors yet (run `agentls index`); these are "
                           "keyword (BM25) results")
            else:
                vector = ranked
                mode = "hybrid"
        except EmbeddingError as exc:
            warning = (f"the embedding provider failed ({exc}); these are keyword (BM25) "
                       "results only")
            log.warning("semantic search: %s", warning)
    if mode == "hybrid":
        fused = fuse_scores([(vector.scored, 1.0), (lexical, BM25_WEIGHT)])
    else:
        fused = fuse([([chunk_id for chunk_id, _ in lexical], 1.0)])
    reranked_by = None
    if reranker is not None and mode == "hybrid" and fused:
        try:
            fused = _rerank(index, reranker, query, fused)
            reranked_by = reranker.model
        except EmbeddingError as exc:
            warning = (f"the re-ranking model failed ({exc}); these are the static vectors' "
                       "results")
            log.warning("semantic search: %s", warning)
    files = rank(index, query, fused, vector.chunks or None)
    hits = _hits(index, files[:top_k], {chunk_id for chunk_id, _ in lexical},
                 {chunk_id for chunk_id, _ in vector.scored}, query)
    return SearchResult(hits, mode, warning, time.perf_counter() - started, reranked_by)


def _rerank(index: SemanticIndex, reranker: Reranker, query: str,
            fused: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The first RERANK_CANDIDATES of ``fused`` in the reranker's order, then the rest;
    scores by rank (1 / (RRF_K + rank)): the ranking rules after it are relative to the best
    score, so test files are demoted after it as before."""
    from agentls.index.rerank import RERANK_CANDIDATES

    head = [chunk_id for chunk_id, _ in fused[:RERANK_CANDIDATES]]
    marks = ",".join("?" * len(head))
    with index.lock:
        rows = {r[0]: r for r in index.conn.execute(
            f"SELECT c.id, c.hash, f.path, c.symbol, c.text FROM chunks c "
            f"JOIN files f ON f.id = c.file_id WHERE c.id IN ({marks})", head)}
    ordered = [chunk_id for chunk_id, _ in
               reranker.order(query, [rows[c] for c in head if c in rows])]
    ordered += [chunk_id for chunk_id, _ in fused[len(head):]]
    return [(chunk_id, 1.0 / (RRF_K + rank)) for rank, chunk_id in enumerate(ordered, 1)]


def definitions(index: SemanticIndex, names: set[str]) -> list[int]:
    """Chunks whose symbol is one of ``names`` or ends with it (``Class.method``): the
    symbol column of the word index narrows them down, then the exact name decides."""
    found: list[int] = []
    for name in sorted(names):
        words = code_words(name)
        if not words:
            continue
        with index.lock:
            rows = index.conn.execute(
                "SELECT c.id, c.symbol FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
                "WHERE chunks_fts MATCH ? LIMIT ?",
                (f'symbol : "{words[0]}"', DEFINITION_ROWS)).fetchall()
        exact = [int(i) for i, symbol in rows
                 if symbol == name or symbol.endswith(f".{name}")]
        found.extend(exact[:DEFINITIONS_LOOKED_UP])
    return found


def rank(index: SemanticIndex, query: str, fused: list[tuple[int, float]],
         index_chunks: int | None = None) -> list[tuple[list[int], float]]:
    """The fused chunks (and, for a query naming a symbol, its definitions) ranked by
    ``ranking.rank_files``: one (the file's chunk ids best first, score) per file, best
    file first. ``index_chunks``: the index's size, which fades the file-level rules where
    the candidates are most of the index."""
    scores = dict(fused)
    names, _ = queried_symbols(query)
    for chunk_id in definitions(index, names) if names else []:
        scores.setdefault(chunk_id, 0.0)
    if not scores:
        return []
    marks = ",".join("?" * len(scores))
    with index.lock:
        rows = index.conn.execute(
            f"SELECT c.id, f.path, c.symbol FROM chunks c JOIN files f ON f.id = c.file_id "
            f"WHERE c.id IN ({marks})", list(scores)).fetchall()
    candidates = [Candidate(int(r[0]), r[1], r[2], scores[r[0]]) for r in rows]
    return [([c.chunk_id for c in chunks], round(score, 6))
            for chunks, score in rank_files(query, candidates, index_chunks)]


ALSO_SHOWN = 3  # other chunks of a file named with its hit


def _hits(index: SemanticIndex, ranked: list[tuple[list[int], float]], lexical: set[int],
          vector: set[int], query: str) -> list[Hit]:
    wanted = [chunk_id for chunks, _ in ranked for chunk_id in chunks[:1 + ALSO_SHOWN]]
    if not wanted:
        return []
    marks = ",".join("?" * len(wanted))
    with index.lock:
        rows = {r[0]: r[1:] for r in index.conn.execute(
            f"SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.text FROM chunks c "
            f"JOIN files f ON f.id = c.file_id WHERE c.id IN ({marks})", wanted)}
    hits = []
    for chunks, score in ranked:
        present = [c for c in chunks[:1 + ALSO_SHOWN] if c in rows]
        if not present:  # removed between ranking and reading
            continue
        chunk_id = present[0]
        path, start, end, symbol, text = rows[chunk_id]
        match = "both" if chunk_id in lexical and chunk_id in vector else (
            "bm25" if chunk_id in lexical else "vector")
        also = tuple((rows[c][1], rows[c][2], rows[c][3]) for c in present[1:])
        hits.append(Hit(path, start, end, symbol, round(score, 5),
                        _snippet(text, start, query), match, also))
    return hits
