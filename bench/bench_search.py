"""Code search judged on public annotated repositories (semble's benchmark annotations).

Each repository's sources come from a registry (`make bench-search-data`,
``bench/search_bench/fetch.py``); its annotated queries are scored with the benchmark's own
metric (nDCG@10 by file, relevant and secondary targets) and recall@5 of the relevant file
(``bench/search_bench/score.py``), per category and per language, for three modes:

- ``default``: what a fresh install searches with (``index.embeddings = auto``,
  ``index.rerank = auto``; an interactive search, as `agentls search` and the agent's
  ``search_semantic`` run it);
- ``keywords``: the same index, keywords (BM25) only;
- ``ripgrep``: semble's ripgrep baseline, the query as one fixed string, files by match count.

`make bench` runs a fixed subset (SUBSET) beside the published figures; `make bench-search`
runs every repository and writes ``bench/results/search.json``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from agentls.index.db import SCHEMA_VERSION
from agentls.index.from_settings import make_embedder, make_reranker
from agentls.index.index import SemanticIndex
from agentls.index.service import WorkspaceSearch
from agentls.settings.config import IndexConfig, Settings
from agentls.tools.search.ripgrep import find_rg
from agentls.workspace.fence import Workspace
from bench.harness import Figure
from bench.search_bench.fetch import CACHE, STAMP, load_repos, source_dir
from bench.search_bench.score import Scored, Task, load_tasks, present, score, summary

TOP_K = 10
MODES = ("default", "keywords", "ripgrep")
# Also measurable: ``static``, the first stage alone (what the default is while re-ranking is
# off), and ``reranked``: index.rerank = auto, the first 20 re-ordered by all-MiniLM-L6-v2.
EXTRA_MODES = ("static", "reranked")
# `make bench`: one repository per language family, small enough for a few minutes.
SUBSET = ("fastapi", "express", "zod", "chi", "serde", "fmtlib")
# Published by semble (benchmarks/README.md, 62 repositories, 1,258 queries): nDCG@10.
PUBLISHED = {
    "semble (potion-code-16M + BM25 + ranking)": 0.852,
    "CodeRankEmbed hybrid": 0.860,
    "CodeRankEmbed": 0.762,
    "BM25 raw": 0.675,
    "ripgrep": 0.123,
}
PUBLISHED_CATEGORIES = {"semble": {"architecture": 0.802, "semantic": 0.846, "symbol": 0.958}}
RESULTS = Path(__file__).resolve().parent / "results"

Searcher = Callable[[Task], list[str]]


def _root(repo: dict) -> tuple[Path, str]:
    """(folder indexed, its path inside the repository: the prefix of annotated paths)."""
    prefix = repo.get("benchmark_root") or ""
    return source_dir(repo["name"]) / prefix, prefix


def _files(repo: dict) -> set[str]:
    folder, prefix = _root(repo)
    return {"/".join(filter(None, [prefix, p.relative_to(folder).as_posix()]))
            for p in folder.rglob("*") if p.is_file()}


def open_index(repo: dict, settings: Settings | None = None) -> WorkspaceSearch:
    """The repository's index as a fresh install makes it (the default settings), kept in
    the bench cache, brought up to date."""
    settings = settings or Settings()
    folder, _ = _root(repo)
    embedder = make_embedder(settings)
    path = CACHE / "index" / f"{repo['name']}-v{SCHEMA_VERSION}.db"  # a chunker change: anew
    path.parent.mkdir(parents=True, exist_ok=True)
    index = SemanticIndex(Workspace([folder]), embedder, path=path)
    found = WorkspaceSearch(index, make_reranker(settings.index, embedder))
    found.update()
    return found


def index_searcher(found: WorkspaceSearch, prefix: str, *, lexical_only: bool,
                   interactive: bool = True) -> Searcher:
    def run(task: Task) -> list[str]:
        result = found.search(task.query, TOP_K, lexical_only=lexical_only,
                              interactive=interactive)
        return ["/".join(filter(None, [prefix, hit.path])) for hit in result.hits]
    return run


def ripgrep_searcher(repo: dict) -> Searcher:
    rg = find_rg()
    folder, prefix = _root(repo)

    def run(task: Task) -> list[str]:
        if rg is None:
            return []
        done = subprocess.run([rg, "--count", "--no-heading", "--ignore-case", "--hidden",
                               "--glob", "!.git", "--fixed-strings", task.query, "."],
                              cwd=folder, capture_output=True, text=True, timeout=30)
        counts = []
        for line in done.stdout.splitlines():
            path, _, count = line.rpartition(":")
            if count.isdigit():
                counts.append((path.removeprefix("./"), int(count)))
        counts.sort(key=lambda item: -item[1])
        return ["/".join(filter(None, [prefix, p])) for p, _ in counts[:TOP_K]]
    return run


def evaluate(names: list[str], modes: tuple[str, ...] = MODES, *,
             log: Callable[[str], None] = print) -> dict:
    """Every mode over these repositories: per-query scores, summaries, what was left out."""
    repos = [r for r in load_repos() if r["name"] in names]
    scored: dict[str, list[Scored]] = {m: [] for m in modes}
    left_out: list[dict] = []
    timings: dict[str, float] = {}
    for repo in repos:
        if not (source_dir(repo["name"]) / STAMP).exists():
            log(f"{repo['name']}: not fetched (make bench-search-data); left out")
            left_out.append({"repo": repo["name"], "query": "*", "why": "not fetched"})
            continue
        files = _files(repo)
        tasks = []
        for task in load_tasks(repo):
            complete, n = present(task, files)
            if complete:
                tasks.append((task, n))
            else:
                left_out.append({"repo": repo["name"], "query": task.query,
                                 "why": "a relevant file is not in this version"})
        started = time.perf_counter()
        found = (open_index(repo) if {"default", "keywords", "static", "reranked"} & set(modes)
                 else None)
        timings[f"index {repo['name']}"] = time.perf_counter() - started
        _, prefix = _root(repo)
        searchers: dict[str, Searcher] = {}
        if found is not None:
            searchers["default"] = index_searcher(found, prefix, lexical_only=False)
            searchers["keywords"] = index_searcher(found, prefix, lexical_only=True)
            searchers["static"] = index_searcher(found, prefix, lexical_only=False,
                                                 interactive=False)
            reranker = (make_reranker(IndexConfig(rerank="auto"), found.index.embedder)
                        if "reranked" in modes else None)
            if reranker is not None:
                searchers["reranked"] = index_searcher(
                    WorkspaceSearch(found.index, reranker), prefix, lexical_only=False)
        searchers["ripgrep"] = ripgrep_searcher(repo)
        try:
            for mode in modes:
                for task, n in tasks:
                    scored[mode].append(score(task, searchers[mode](task), n))
        finally:
            if found is not None:
                found.close()
                if "reranked" in searchers and reranker is not None:
                    reranker.close()  # its worker process (torch) goes now, not when idle
        mine = {m: [s for s in scored[m] if s.task.repo == repo["name"]] for m in modes}
        line = "  ".join(f"{m} {summary(mine[m])['all']['ndcg10']:.3f}" for m in modes)
        log(f"{repo['name']:<14} {len(tasks):>3} queries  nDCG@10: {line}")
    return {"summaries": {m: summary(scored[m]) for m in modes}, "left_out": left_out,
            "scored": scored, "timings": timings}


def table(summaries: dict[str, dict[str, dict[str, float]]]) -> str:
    modes = list(summaries)
    keys = list(next(iter(summaries.values())))
    lines = [f"{'':<14}" + "".join(f"{m:>22}" for m in modes),
             f"{'':<14}" + "".join(f"{'nDCG@10  recall@5  n':>22}" for _ in modes)]
    for key in keys:
        row = f"{key:<14}"
        for m in modes:
            s = summaries[m].get(key)
            row += (f"{s['ndcg10']:>9.3f} {s['recall5']:>8.2f} {int(s['queries']):>3}"
                    if s else f"{'':>22}")
        lines.append(row)
    return "\n".join(lines)


def published() -> str:
    lines = ["Published by semble (its 62 repositories, not this subset), nDCG@10:"]
    lines += [f"  {name:<44} {value:.3f}" for name, value in PUBLISHED.items()]
    for name, cats in PUBLISHED_CATEGORIES.items():
        lines.append(f"  {name} by category: " + ", ".join(f"{k} {v:.3f}" for k, v in cats.items()))
    return "\n".join(lines)


def run() -> list[Figure]:
    """`make bench`: the fixed subset, every mode."""
    result = evaluate(list(SUBSET))
    print(table(result["summaries"]))
    print(published())
    figures = []
    for mode, summ in result["summaries"].items():
        everything = summ["all"]
        goal = {"default": "all 16 (make bench-search) >= 0.85; published semble 0.852",
                "keywords": "all 16 >= 0.68; published BM25 0.675",
                "ripgrep": "published 0.123"}.get(mode, "")
        figures.append(Figure(f"search benchmark subset nDCG@10, {mode}", everything["ndcg10"],
                              "", goal=goal))
        figures.append(Figure(f"search benchmark subset recall@5, {mode}", everything["recall5"],
                              ""))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help="repositories (default: all)")
    parser.add_argument("--mode", action="append", choices=MODES + EXTRA_MODES,
                        help="modes (default: all)")
    parser.add_argument("--verbose", action="store_true", help="every query's ranks")
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                        help="an ablation: set a module constant (agentls.index.query."
                             "BM25_WEIGHT=1.0) for this run")
    args = parser.parse_args(argv)
    for assignment in args.set:
        target, _, value = assignment.partition("=")
        module_name, _, name = target.rpartition(".")
        module = importlib.import_module(module_name)
        kind = type(getattr(module, name))
        setattr(module, name, value in ("1", "true", "True") if kind is bool else kind(value))
    names = args.names or [r["name"] for r in load_repos()]
    modes = tuple(args.mode or MODES)
    result = evaluate(names, modes)
    if args.verbose:
        for mode in modes:
            for s in result["scored"][mode]:
                print(f"[{mode}] {s.task.repo} [{s.task.category}] {s.ndcg10:.2f} "
                      f"{s.task.query!r} -> {list(s.top)} want {list(s.task.relevant)}")
    print(table(result["summaries"]))
    print(published())
    print(f"left out: {len(result['left_out'])} queries")
    for item in result["left_out"]:
        print(f"  {item['repo']}: {item['query']!r} ({item['why']})")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"summaries": result["summaries"], "left_out": result["left_out"],
           "timings_s": result["timings"]}
    if not args.set and not args.names:  # the full run with the shipped settings
        (RESULTS / "search.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
