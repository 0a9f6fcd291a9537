"""The code-search benchmark's metric (bench/search_bench/score.py) as semble's harness
defines it, and its data: every annotation parses, names its category and has a source."""

from __future__ import annotations

import math

import pytest
from bench.search_bench.fetch import load_repos
from bench.search_bench.score import (
    ANNOTATIONS,
    CATEGORIES,
    Task,
    load_tasks,
    ndcg_at_k,
    present,
    score,
    summary,
)


def task(relevant: tuple[str, ...], secondary: tuple[str, ...] = (), repo: str = "r",
         category: str = "semantic") -> Task:
    return Task(repo, "python", "q", category, relevant, secondary)


def test_ndcg_binary_gains_over_the_targets_present() -> None:
    assert ndcg_at_k([1], 1) == 1.0
    assert ndcg_at_k([2], 1) == pytest.approx(1 / math.log2(3))
    # Two targets, one found first: DCG 1 against an ideal of 1 + 1/log2(3).
    assert ndcg_at_k([1], 2) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert ndcg_at_k([11], 1) == 0.0 and ndcg_at_k([], 0) == 0.0


def test_a_target_counts_at_its_files_first_hit_and_recall_reads_relevant_files_only() -> None:
    t = task(("pkg/routing.py",), ("pkg/app.py",))
    scored = score(t, ["pkg/other.py", "pkg/routing.py", "pkg/routing.py", "pkg/app.py"], 2)
    assert scored.ranks == (2, 4)
    assert scored.recall5 == 1.0
    assert score(t, ["pkg/app.py"], 2).recall5 == 0.0  # a secondary file alone
    assert score(t, [f"f{i}.py" for i in range(5)] + ["pkg/routing.py"], 2).recall5 == 0.0


def test_queries_whose_relevant_file_is_missing_are_left_out() -> None:
    t = task(("a.py",), ("b.py", "c.py"))
    assert present(t, {"a.py", "b.py"}) == (True, 2)
    assert present(t, {"b.py", "c.py"}) == (False, 2)


def test_summary_averages_repositories_then_reports_categories_over_queries() -> None:
    one = [score(task(("a.py",), repo="x"), ["a.py"], 1),
           score(task(("a.py",), repo="x", category="symbol"), ["b.py"], 1)]
    two = [score(task(("a.py",), repo="y"), ["a.py"], 1)]
    out = summary(one + two)
    assert out["all"]["ndcg10"] == pytest.approx((0.5 + 1.0) / 2)
    assert out["semantic"]["ndcg10"] == 1.0 and out["symbol"]["ndcg10"] == 0.0


def test_every_annotation_file_has_a_source_and_parses() -> None:
    repos = {r["name"]: r for r in load_repos()}
    files = {p.stem for p in ANNOTATIONS.glob("*.json")}
    assert files == set(repos)
    assert len(repos) >= 15 and len({r["language"] for r in repos.values()}) >= 4
    for repo in repos.values():
        tasks = load_tasks(repo)
        assert tasks and all(t.category in CATEGORIES and t.relevant for t in tasks)
        assert repo["source"]["kind"] in ("pypi", "npm", "deb")
