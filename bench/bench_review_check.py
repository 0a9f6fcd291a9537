"""The review check: which hunks of an agent's edit the document holds after a person's review
(lsp/services/review_check.py -> workspace/kept_hunks.py: ``hunks_and_kept``, one
``line_opcodes``). Measured on:

* one 20,000-line file with 2,000 hunks (every tenth line changed, as the VS Code e2e's
  review_bench/big.py), one hunk kept: goal < 1 s (the panel's "kept 1 of 2000 changes"
  waits for it);
* 20,000 lines of this repository's own Python with 2,000 changes: every tenth line, and at
  random lines (where difflib's recursion is balanced and already fast).

The baseline is the check as it was: ``hunks`` then ``kept_hunks`` (two line diffs) with plain
``difflib.SequenceMatcher`` in place of workspace/line_matcher.py, measured in the same run;
the answers of both are compared before timing.
"""

from __future__ import annotations

import difflib
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import agentls.workspace.line_diff as line_diff
from agentls.workspace.kept_hunks import hunks, hunks_and_kept, kept_hunks
from bench.harness import Figure, ms

SOURCE = Path(__file__).resolve().parents[1] / "server" / "agentls"
LINES, EVERY = 20_000, 10
OURS_ROUNDS, BASELINE_ROUNDS = 7, 2  # the baseline takes tens of seconds a round
GOAL_MS = 1000.0


class _Difflib(difflib.SequenceMatcher[str]):
    def __init__(self, a: list[str], b: list[str], autojunk: bool = True) -> None:
        super().__init__(None, a, b, autojunk)


def _check(base: str, proposed: str, now: str) -> tuple[object, object]:
    found, kept = hunks_and_kept(base, proposed, now)
    return [(h.line, h.old, h.new) for h in found], kept


def _previous(base: str, proposed: str, now: str) -> tuple[object, object]:
    """The check as it was: plain difflib, and the line diff computed twice."""
    saved = line_diff.LineMatcher
    line_diff.LineMatcher = _Difflib  # type: ignore[misc, assignment]
    try:
        found = [(h.line, h.old, h.new) for h in hunks(base, proposed)]
        return found, kept_hunks(base, proposed, now)
    finally:
        line_diff.LineMatcher = saved  # type: ignore[misc]


def _timed(work: Callable[[], object], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        samples.append(time.perf_counter() - start)
    return ms(statistics.median(samples))


def _figure(name: str, base: list[str], proposed: list[str], goal: bool) -> Figure:
    # The person kept the first hunk only.
    first = hunks("".join(base), "".join(proposed))[0]
    now_lines = list(base)
    now_lines[first.line - 1:first.line - 1 + len(first.old)] = list(first.new)
    texts = "".join(base), "".join(proposed), "".join(now_lines)
    ours = _check(*texts)
    if ours != _previous(*texts):
        raise AssertionError(f"{name}: the line matcher and difflib disagree")
    value = _timed(lambda: _check(*texts), OURS_ROUNDS)
    baseline = _timed(lambda: _previous(*texts), BASELINE_ROUNDS)
    if not goal:
        return Figure(name, value, "ms", baseline)
    return Figure(name, value, "ms", baseline, f"< {GOAL_MS:.0f} ms", value < GOAL_MS)


def _repository_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted(SOURCE.rglob("*.py")):
        lines.extend(line_diff.split_lines(path.read_text(encoding="utf-8")))
        if len(lines) >= LINES:
            break
    return lines[:LINES]


def run() -> list[Figure]:
    big = [f"big_{k} = {k}\n" for k in range(LINES)]
    doubled = [f"big_{k} = {k}{' * 2' if k % EVERY == 5 else ''}\n" for k in range(LINES)]
    code = _repository_lines()
    tenth = [line.rstrip("\n") + "  # changed\n" if k % EVERY == 5 else line
             for k, line in enumerate(code)]
    rng = random.Random(41)
    chosen = set(rng.sample(range(len(code)), len(code) // EVERY))
    scattered = [line.rstrip("\n") + "  # changed\n" if k in chosen else line
                 for k, line in enumerate(code)]
    return [
        _figure("review check: kept hunks of a 20,000-line file with 2,000 hunks (one kept)",
                big, doubled, goal=True),
        _figure("review check: 20,000 lines of this repository, every tenth line changed",
                code, tenth, goal=True),
        _figure("review check: 20,000 lines of this repository, 2,000 random lines changed",
                code, scattered, goal=False),
    ]
