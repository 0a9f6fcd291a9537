"""Engine: overhead per iteration, prompt prefix stability, token estimate after calibration.

The model is the scripted server over real HTTP; time spent inside the backend's stream (the
model's time) is measured and subtracted, so what remains is the engine's own work.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agentls.devtools.replay.command import ReplayServer
from agentls.engine.events import RecordingFrontend
from agentls.engine.loop.agent import Agent, RunRequest
from agentls.engine.prompt.tokens import TokenEstimator
from agentls.engine.sessions.store import SessionStore
from agentls.llm.messages import ChatChunk, ChatRequest, Message, ToolCall
from agentls.llm.pool import BackendPool
from agentls.settings.config import (
    BackendConfig,
    CacheConfig,
    CompactionConfig,
    RetryConfig,
    Settings,
)
from agentls.workspace.fence import Workspace
from bench.harness import Figure, percentile_ms

ITERATIONS = 20
HISTORY = 200

PROSE = ("The session store keeps every message as it completes, so a killed process loses "
         "at most the message in flight. ")
CODE = ("def trim(history: list[Message], budget: int) -> list[Message]:\n"
        "    while estimate(history) > budget and len(history) > 4:\n"
        "        history = history[1:]\n    return history\n")


class TimedBackends:
    """The real pool, with the time spent waiting on the model's stream recorded."""

    def __init__(self, pool: BackendPool) -> None:
        self.pool = pool
        self.calls: list[tuple[float, float]] = []  # (start, end) of each model stream

    def get(self, name: str | None = None) -> Any:
        backend = self.pool.get(name)
        outer = self

        class Timed:
            def __init__(self) -> None:
                self.name, self.model = backend.name, backend.model

            async def stream(self, request: ChatRequest, **kw: Any) -> AsyncIterator[ChatChunk]:
                start = time.perf_counter()
                chunks = [chunk async for chunk in backend.stream(request, **kw)]
                outer.calls.append((start, time.perf_counter()))
                for chunk in chunks:
                    yield chunk

            async def complete(self, request: ChatRequest, **kw: Any) -> Any:
                return await backend.complete(request, **kw)

        return Timed()


def _history(store: SessionStore, session_id: str) -> None:
    for i in range(HISTORY // 4):
        store.append(session_id, Message.user(f"step {i}: " + PROSE))
        store.append(session_id, Message.assistant(None, [ToolCall(f"h{i}", "read_file",
                                                                   '{"path": "a.py"}')]))
        store.append(session_id, Message.tool(f"h{i}", json.dumps({"ok": True, "content": CODE}),
                                              "read_file"))
        store.append(session_id, Message.assistant("Done with step. " + PROSE))


def _prefix_fraction(previous: list[dict[str, Any]], current: list[dict[str, Any]],
                     count: Any) -> float:
    sizes = [count(json.dumps(m, sort_keys=True)) for m in current]
    shared = 0
    for before, now in zip(previous, current, strict=False):
        if before != now:
            break
        shared += 1
    return sum(sizes[:shared]) / sum(sizes)


async def _engine_figures(folder: Path) -> list[Figure]:
    root = folder / "project"
    root.mkdir()
    (root / "a.py").write_text(CODE)
    with ReplayServer({"steps": []}) as server:
        settings = Settings(
            backend="scripted",
            backends={"scripted": BackendConfig(base_url=server.base_url, model="scripted-model",
                                                api_key_env=None, context_max_tokens=200_000)},
            cache=CacheConfig(enabled=False), retry=RetryConfig(max_retries=0),
            max_iterations=ITERATIONS + 5,
            compaction=CompactionConfig(max_messages=1_000),  # keep all 200 in the requests
        )
        pool = BackendPool(settings)
        store = SessionStore.for_workspace(root)
        backends = TimedBackends(pool)
        agent = Agent(settings, backends, store)
        session = store.create_session(backend="scripted", model="scripted-model")
        _history(store, session.id)
        # Distinct calls: the no-progress guard would stop identical ones.
        server.load({"steps": [
            {"times": 1, "match": {"user": "go"}, "reply": {"tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.py", "start_line": n}}]}}
            for n in range(1, ITERATIONS)] + [{"reply": {"text": "All done."}}]})
        start = time.perf_counter()
        result = await agent.run(session.id, RunRequest("go"), RecordingFrontend(),
                                 Workspace([root]))
        end = time.perf_counter()
        assert result.stop_reason == "done", result.error_message
        calls = backends.calls
        # Engine work of an iteration: from the model's answer to the next request (tools,
        # storing messages, trimming, building the request).
        gaps = [nxt[0] - prev[1] for prev, nxt in itertools.pairwise(calls)]
        overhead_ms = statistics.median(gaps) * 1000
        p10_ms, p90_ms = (percentile_ms(gaps, 10), percentile_ms(gaps, 90))
        setup_ms = (calls[0][0] - start) * 1000
        teardown_ms = (end - calls[-1][1]) * 1000
        bodies = [r.body["messages"] for r in server.requests]
        estimator = TokenEstimator()
        fractions = [_prefix_fraction(a, b, estimator.count_text)
                     for a, b in itertools.pairwise(bodies)]
        await pool.aclose()
        store.close()
    stability = statistics.mean(fractions) * 100
    return [
        Figure(f"engine overhead per iteration ({HISTORY} messages of history), median "
               f"(p10 {p10_ms:.2f} ms, p90 {p90_ms:.2f} ms, {len(gaps)} iterations)",
               overhead_ms, "ms", None, "<= 3 ms median", overhead_ms <= 3),
        Figure(f"engine overhead per iteration ({HISTORY} messages of history), p90",
               p90_ms, "ms"),
        Figure("engine start of a run (facts, history, first request)", setup_ms, "ms"),
        Figure("engine end of a run (summary, events)", teardown_ms, "ms"),
        Figure("prompt prefix unchanged between iterations (mean)", stability, "%", None,
               ">= 95 %", stability >= 95),
        Figure("prompt prefix unchanged between iterations (worst)", min(fractions) * 100, "%",
               None, "", None),
    ]


async def _estimate_figure() -> Figure:
    calibration = [Message.system("You are a coding agent."),
                   Message.user(PROSE * 3 + "\n" + CODE * 2)]
    other = [Message.system("You review code."),
             Message.user("Please check this:\n" + CODE * 3 + PROSE * 2),
             Message.assistant("It trims from the front. " + PROSE)]
    with ReplayServer({"steps": [{"times": "*", "reply": {"text": "ok"}}]}) as server:
        config = BackendConfig(base_url=server.base_url, model="scripted-model",
                               api_key_env=None)
        pool = BackendPool(Settings(backend="s", backends={"s": config},
                                    cache=CacheConfig(enabled=False)))
        backend = pool.get()
        estimator = TokenEstimator()
        key = (backend.name, backend.model)
        first = await backend.complete(ChatRequest(calibration), use_cache=False)
        estimator.observe_request(key, calibration, [], first.usage.prompt_tokens)
        second = await backend.complete(ChatRequest(other), use_cache=False)
        estimate = estimator.estimate_messages(key, other)
        await pool.aclose()
    error = abs(estimate - second.usage.prompt_tokens) / second.usage.prompt_tokens * 100
    return Figure("token estimate error after one calibration", error, "%", None, "<= 10 %",
                  error <= 10)


async def _cancel_figure(folder: Path) -> Figure:
    """From ``Agent.cancel`` to the run's result, while the model is mid-stream."""
    root = folder / "cancel"
    root.mkdir()
    slow = {"steps": [{"times": "*", "reply": {"text": "x" * 400, "chunk_size": 1,
                                               "delay_s": 0.02}}]}
    with ReplayServer(slow) as server:
        settings = Settings(
            backend="scripted",
            backends={"scripted": BackendConfig(base_url=server.base_url, model="scripted-model",
                                                api_key_env=None)},
            cache=CacheConfig(enabled=False), retry=RetryConfig(max_retries=0),
        )
        pool = BackendPool(settings)
        store = SessionStore.for_workspace(root)
        agent = Agent(settings, pool, store)
        samples = []
        for n in range(10):
            session = store.create_session(backend="scripted", model="scripted-model")
            front = RecordingFrontend()
            task = asyncio.create_task(agent.run(session.id, RunRequest("go"), front,
                                                 Workspace([root]), run_id=f"c{n}"))
            while not front.of("text"):
                await asyncio.sleep(0.005)
            start = time.perf_counter()
            agent.cancel(f"c{n}")
            result = await task
            samples.append(time.perf_counter() - start)
            assert result.stop_reason == "cancelled"
        await pool.aclose()
        store.close()
    value = statistics.median(samples) * 1000
    worst = max(samples) * 1000
    return Figure(f"cancel mid-stream to result, median (worst {worst:.1f} ms)", value, "ms",
                  None, "<= 200 ms", worst <= 200)


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory() as folder:
        figures = asyncio.run(_engine_figures(Path(folder)))
        figures.append(asyncio.run(_cancel_figure(Path(folder))))
    figures.append(asyncio.run(_estimate_figure()))
    return figures
