"""Recall@k and MRR of the search index over a labelled query set (tests and bench).

A labelled query names the file and symbol that answer it; a hit counts when its path matches
and its symbol, or one of the file's other matching chunks it names (``Hit.also``), does.
The set shipped with the tests is ``tests/workspaces/semantic_queries.json``
over the fixture repository ``tests/workspaces/semantic_repo``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentls.index.query import Hit


@dataclass(frozen=True)
class Labelled:
    query: str
    path: str
    symbol: str


@dataclass(frozen=True)
class Quality:
    recall_at_5: float
    mrr: float
    queries: int
    misses: tuple[str, ...]  # queries whose target is not in the top 5


def load_queries(path: Path) -> list[Labelled]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    return [Labelled(q["q"], q["path"], q["symbol"]) for q in raw["queries"]]


def rank_of(hits: Sequence[Hit], target: Labelled) -> int | None:
    for rank, hit in enumerate(hits, 1):
        symbols = {hit.symbol, *(symbol for _, _, symbol in hit.also)}
        if hit.path == target.path and target.symbol in symbols:
            return rank
    return None


def evaluate(search: Callable[[str], Sequence[Hit]], queries: Sequence[Labelled],
             k: int = 5) -> Quality:
    found, reciprocal, misses = 0, 0.0, []
    for labelled in queries:
        rank = rank_of(search(labelled.query), labelled)
        if rank is not None:
            reciprocal += 1.0 / rank
        if rank is not None and rank <= k:
            found += 1
        else:
            misses.append(labelled.query)
    n = len(queries) or 1
    return Quality(found / n, reciprocal / n, len(queries), tuple(misses))
