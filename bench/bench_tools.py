"""Tools: search_text against bare ripgrep on a big tree, and edit_file on a long file."""

from __future__ import annotations

import asyncio
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path

from agentls.tools import files
from agentls.tools.search.ripgrep import rg_command
from agentls.tools.search.text import search_text
from agentls.workspace.fence import Workspace
from bench.harness import Figure, median_ms

SEARCH_ROUNDS = 7
EDITS = 60


def _stdlib_tree() -> Path:
    """The Python standard library's source: tens of thousands of real files."""
    return Path(sysconfig.get_paths()["stdlib"])


def _count_files(root: Path) -> int:
    return sum(1 for p in root.rglob("*") if p.is_file())


async def _search_figure(query: str, label: str, rounds: int) -> Figure:
    root = _stdlib_tree()
    ws = Workspace([root])
    argv, cwd = rg_command(ws, query)

    async def ours() -> float:
        start = time.perf_counter()
        result = await search_text(ws, query)
        assert result["ok"]
        return time.perf_counter() - start

    def bare() -> float:
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
        assert done.returncode in (0, 1)  # 1: no match
        return time.perf_counter() - start

    await ours()
    bare()  # warm the page cache for both
    mine, base = [], []
    for _ in range(rounds):
        base.append(bare())
        mine.append(await ours())
    value, reference = median_ms(mine), median_ms(base)
    return Figure(f"search_text {label} over {_count_files(root)} files vs the same rg command",
                  value, "ms", reference, "ratio <= 1.3", value / reference <= 1.3)


def _edit_figure() -> Figure:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        lines = [f"    value_{i} = compute({i}, 'item {i}')  # line {i}" for i in range(10_000)]
        (root / "big.py").write_text("def big():\n" + "\n".join(lines) + "\n")
        ws = Workspace([root])
        samples = []
        for n in range(EDITS):
            i = n * 160
            params = files.EditFileParams(path="big.py", edits=[files.Edit(
                search=f"value_{i} = compute({i}, 'item {i}')",
                replace=f"value_{i} = compute({i} + 1, 'item {i}')")])
            start = time.perf_counter()
            result = files.edit_file(ws, params)
            samples.append(time.perf_counter() - start)
            assert result["ok"], result
    value = median_ms(samples)
    return Figure("edit_file on a 10,000-line file, median per edit", value, "ms", None,
                  "<= 5 ms", value <= 5)


def run() -> list[Figure]:
    return [
        # A common word: search_text stops reading once it has max_results lines.
        asyncio.run(_search_figure("import", "common word 'import'", SEARCH_ROUNDS)),
        # A word that is nowhere: both sides scan every file, the fairest comparison.
        asyncio.run(_search_figure("qzxv_nowhere_9", "absent word (full scan)", 3)),
        _edit_figure(),
    ]
