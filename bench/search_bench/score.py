"""The benchmark's tasks and its metric, as semble's harness defines them (our own code).

A task is one annotated query with its relevant files, secondary files and a category
(semantic, architecture, symbol). A search answers with a ranked list of (path, start line,
end line) hits, ten at most. A target's rank is that of the first hit in its file; the gain
of every target found, relevant or secondary, is 1 (binary relevance); nDCG@10 divides the
DCG of those ranks by the DCG of an ideal list holding as many targets as the index has
(``min(10, targets present)``). Recall@5 here: the share of queries with a relevant (not
secondary) file among the first five hits.

Line spans: a few annotations name lines as well as a file. They were written against other
revisions than the packaged versions these sources come from, so their lines are not those
of our copies; every target is scored at file level (a span target counts when its file is
hit). Queries whose relevant files a version lacks are counted and left out.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ANNOTATIONS = HERE / "annotations"
CATEGORIES = ("semantic", "architecture", "symbol")


@dataclass(frozen=True)
class Task:
    repo: str
    language: str
    query: str
    category: str
    relevant: tuple[str, ...]
    secondary: tuple[str, ...]


@dataclass(frozen=True)
class Scored:
    task: Task
    ndcg10: float
    recall5: float
    ranks: tuple[int, ...]
    top: tuple[str, ...]  # the first files answered, for the per-query report


def _path(raw: str | dict) -> str:
    return raw if isinstance(raw, str) else str(raw["path"])


def load_tasks(repo: dict) -> list[Task]:
    raw = json.loads((ANNOTATIONS / f"{repo['name']}.json").read_text(encoding="utf-8"))
    return [Task(repo["name"], repo["language"], item["query"], item["category"],
                 tuple(_path(t) for t in item.get("relevant", [])),
                 tuple(_path(t) for t in item.get("secondary", [])))
            for item in raw]


def present(task: Task, files: set[str]) -> tuple[bool, int]:
    """(every relevant file is in this version, how many targets are)."""
    targets = dict.fromkeys(task.relevant + task.secondary)
    return all(p in files for p in task.relevant), sum(1 for p in targets if p in files)


def dcg(gains: list[int]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranks: list[int], n_targets: int, k: int = 10) -> float:
    if n_targets == 0:
        return 0.0
    gains = [0] * k
    for rank in ranks:
        if 1 <= rank <= k:
            gains[rank - 1] = 1
    return dcg(gains) / dcg([1] * min(k, n_targets))


def path_matches(hit: str, target: str) -> bool:
    return hit == target or hit.endswith("/" + target) or target.endswith("/" + hit)


def score(task: Task, hits: list[str], n_targets: int) -> Scored:
    """``hits``: the answered paths (relative to the repository), best first."""
    top = hits[:10]
    ranks = []
    for target in dict.fromkeys(task.relevant + task.secondary):
        rank = next((i for i, h in enumerate(top, 1) if path_matches(h, target)), None)
        if rank is not None:
            ranks.append(rank)
    found5 = any(path_matches(h, t) for h in top[:5] for t in task.relevant)
    return Scored(task, ndcg_at_k(ranks, n_targets), 1.0 if found5 else 0.0, tuple(ranks),
                  tuple(dict.fromkeys(top[:5])))


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def summary(scored: list[Scored]) -> dict[str, dict[str, float]]:
    """nDCG@10 and recall@5: overall as semble's harness reports it (the mean of the
    repositories' means), and over queries per category and per language."""
    by_repo: dict[str, list[Scored]] = {}
    for s in scored:
        by_repo.setdefault(s.task.repo, []).append(s)
    out: dict[str, dict[str, float]] = {"all": {
        "ndcg10": mean([mean([s.ndcg10 for s in group]) for group in by_repo.values()]),
        "recall5": mean([mean([s.recall5 for s in group]) for group in by_repo.values()]),
        "queries": float(len(scored)),
    }}
    keys = sorted({s.task.category for s in scored}) + sorted({s.task.language for s in scored})
    for key in keys:
        part = [s for s in scored if key in (s.task.category, s.task.language)]
        out[key] = {"ndcg10": mean([s.ndcg10 for s in part]),
                    "recall5": mean([s.recall5 for s in part]), "queries": float(len(part))}
    return out
