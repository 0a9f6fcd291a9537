"""`make bench`: run every benchmark, print a table, write bench/results/latest.json."""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.harness import Figure

SUITES = ["bench.bench_llm", "bench.bench_tools", "bench.bench_engine", "bench.bench_lsp",
          "bench.bench_completion", "bench.bench_next_edit",
          "bench.bench_request", "bench.bench_cli", "bench.bench_sandbox",
          "bench.bench_vscode", "bench.bench_index", "bench.bench_history",
          "bench.bench_acp", "bench.bench_nvim_review", "bench.bench_review_check",
          "bench.bench_mcp", "bench.bench_search", "bench.bench_langservers"]
RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("suites", nargs="*", help="module names (default: all)")
    args = parser.parse_args(argv)
    figures: list[Figure] = []
    for name in args.suites or SUITES:
        module = importlib.import_module(name)
        figures.extend(module.run())

    RESULTS.mkdir(parents=True, exist_ok=True)
    report = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "figures": [f.to_json() for f in figures],
    }
    (RESULTS / "latest.json").write_text(json.dumps(report, indent=2) + "\n")

    table = Table(title="AgentLS benchmarks")
    for column in ("figure", "value", "baseline", "ratio", "goal", "met"):
        table.add_column(column)
    for f in figures:
        table.add_row(
            f.name,
            f"{f.value:.3f} {f.unit}",
            "" if f.baseline is None else f"{f.baseline:.3f} {f.unit}",
            "" if f.ratio is None else f"{f.ratio:.2f}",
            f.goal,
            {True: "yes", False: "NO", None: ""}[f.met],
        )
    Console().print(table)
    print(f"written to {RESULTS / 'latest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
