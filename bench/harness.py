"""What every benchmark reports, and the timing helpers they share.

Figures are ratios against a baseline measured in the same process, interleaved with ours,
so a noisy machine slows both sides alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class Figure:
    name: str
    value: float
    unit: str
    baseline: float | None = None
    goal: str = ""  # e.g. "ratio <= 3" or "< 20 ms"
    met: bool | None = None

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio
        return data


def ms(seconds: float) -> float:
    return seconds * 1000.0


def median_ms(samples: list[float]) -> float:
    return ms(statistics.median(samples))


def percentile_ms(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ms(ordered[index])


def interleaved(
    ours: Callable[[], object], baseline: Callable[[], object], rounds: int
) -> tuple[list[float], list[float]]:
    """Time both functions alternately, ``rounds`` times each."""
    mine: list[float] = []
    base: list[float] = []
    for _ in range(rounds):
        start = time.perf_counter()
        baseline()
        base.append(time.perf_counter() - start)
        start = time.perf_counter()
        ours()
        mine.append(time.perf_counter() - start)
    return mine, base


async def interleaved_async(
    ours: Callable[[], Awaitable[float]],
    baseline: Callable[[], Awaitable[float]],
    rounds: int,
) -> tuple[list[float], list[float]]:
    """Like ``interleaved`` for coroutines that return their own measured duration."""
    mine: list[float] = []
    base: list[float] = []
    for _ in range(rounds):
        base.append(await baseline())
        mine.append(await ours())
    return mine, base
