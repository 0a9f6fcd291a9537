"""The sandbox's cost: a sandboxed command against the same command run bare, building the
pending layer of a 50-file ChangeSet, and a 20k-file workspace (an overlay, no copy)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentls.sandbox.bwrap import probe
from agentls.tools.shell import shell_exec as shell
from agentls.tools.shell.sandboxed import ShellSandbox
from agentls.workspace.fence import Workspace
from agentls.workspace.overlay import ShadowWorkspace
from bench.harness import Figure, median_ms

ROUNDS = 21
ADDED_GOAL_MS = 15.0


def _project(root: Path) -> Path:
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    for n in range(5):
        (root / f"test_calc{n}.py").write_text(
            f"from calc import add\n\n\ndef test_{n}():\n    assert add({n}, 1) == {n + 1}\n")
    (root / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    return root


async def _pair(ws: Workspace, command: str, rounds: int) -> tuple[float, float, float]:
    """Medians (ms) of the command sandboxed and bare, interleaved, and the median of the
    rounds' differences (each sandboxed run minus the bare run just before it): on a command
    of a second or more the machine's drift between rounds is larger than the sandbox's cost,
    and a difference of two medians moved with it (pytest's figure passed and failed by
    turns); paired runs see the same machine."""
    sandbox = ShellSandbox(session_key="bench")

    async def sandboxed() -> float:
        start = time.perf_counter()
        result = await sandbox.run(ws, command, None, 120, api_key_env="OPENAI_API_KEY",
                                   output_limit=2000)
        assert result.get("exit_code") == 0, result
        return time.perf_counter() - start

    async def bare() -> float:
        start = time.perf_counter()
        result = await shell.shell_exec(ws, command, None, 120)
        assert result.get("exit_code") == 0, result
        return time.perf_counter() - start

    await sandboxed()
    await bare()
    mine, base = [], []
    for _ in range(rounds):
        base.append(await bare())
        mine.append(await sandboxed())
    added = median_ms([m - b for m, b in zip(mine, base, strict=True)])
    return median_ms(mine), median_ms(base), added


async def _command_figures() -> list[Figure]:
    figures = []
    with tempfile.TemporaryDirectory() as folder:
        ws = Workspace([_project(Path(folder))])
        value, base, added = await _pair(ws, "true", ROUNDS)
        figures.append(Figure(f"shell_exec `true` sandboxed vs bare (median of {ROUNDS}; "
                              f"{added:.1f} ms added, median of the paired differences)",
                              value, "ms", base, f"<= {ADDED_GOAL_MS:g} ms added",
                              added <= ADDED_GOAL_MS))
        # The project's own tests, without the plugins of the virtualenv this runs in
        # (AgentLS's dev tools: pytest-lsp, hypothesis, ...): loading those was 1.3 s of a
        # 1.5 s run, and its jitter, larger than the sandbox's cost, made the figure pass
        # and fail by turns.
        command = (f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q "
                   "-p no:cacheprovider")
        value, base, added = await _pair(ws, command, ROUNDS)
        figures.append(Figure(f"shell_exec `pytest -q` (5 tests, no plugin autoload) "
                              f"sandboxed vs bare (median of {ROUNDS}; {added:.1f} ms "
                              "added, median of the paired differences)", value, "ms", base,
                              f"<= {ADDED_GOAL_MS:g} ms added", added <= ADDED_GOAL_MS))
    return figures


def _materialise_figure() -> Figure:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for n in range(50):
            (root / f"pkg{n % 5}").mkdir(exist_ok=True)
            (root / f"pkg{n % 5}" / f"m{n}.py").write_text(f"x = {n}\n" * 200)
        ws = Workspace([root])
        for n in range(50):
            wp = ws.resolve(f"pkg{n % 5}/m{n}.py")
            if n % 10 == 9:
                ws.stage_delete(wp)
            else:
                ws.stage_write(wp, f"y = {n}\n" * 200)
        samples = []
        for _ in range(ROUNDS):  # a new session each time: every file written afresh
            shadow = ShadowWorkspace(ws, "bench")
            start = time.perf_counter()
            shadow.materialise()
            samples.append(time.perf_counter() - start)
        value = median_ms(samples)
    return Figure("materialise a 50-file ChangeSet as the pending layer (first command of a "
                  "session)", value, "ms", None, "<= 20 ms", value <= 20.0)


def _big_workspace_figure() -> list[Figure]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for d in range(200):
            sub = root / f"d{d}"
            sub.mkdir()
            for f in range(100):
                (sub / f"f{f}.py").write_text("x = 1\n")
        _project(root)
        ws = Workspace([root])
        asyncio.run(_pair(ws, "true", 1))  # warm up
        value, base, added = asyncio.run(_pair(ws, "true", ROUNDS))
        scratch = root / ".agentls" / "scratch"
        copied = sum(1 for p in scratch.rglob("*") if p.is_file())
    return [
        Figure("shell_exec `true` sandboxed vs bare in a 20,000-file workspace "
               f"({added:.1f} ms added, median of the paired differences)", value, "ms",
               base, f"<= {ADDED_GOAL_MS:g} ms added", added <= ADDED_GOAL_MS),
        Figure("files copied into the scratch layer for a 20,000-file workspace", copied,
               "files", None, "0 (an overlay, no copy)", copied == 0),
    ]


def run() -> list[Figure]:
    status = probe()
    if not status.available:
        print(f"bench_sandbox: skipped, {status.describe()}", file=sys.stderr)
        return []
    subprocess.run(["true"], check=True)
    figures = asyncio.run(_command_figures())
    figures.append(_materialise_figure())
    figures.extend(_big_workspace_figure())
    return figures


if __name__ == "__main__":
    for figure in run():
        print(figure.to_json())
