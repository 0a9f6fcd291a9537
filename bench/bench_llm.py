"""Backend layer: the cache hit path and the time to first token through our layer."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import diskcache
import openai

from agentls.devtools.replay.command import ReplayServer
from agentls.llm.cache import ResponseCache
from agentls.llm.messages import ChatRequest, ChatResponse, Message, ToolSpec, Usage
from agentls.llm.openai_compat import OpenAICompatBackend
from agentls.settings.config import BackendConfig
from bench.harness import Figure, interleaved_async, median_ms

ROUNDS = 300
TTFT_ROUNDS = 60


def typical_request() -> ChatRequest:
    """A mid-run agent request: system prompt, tools, a few turns of history."""
    tools = [
        ToolSpec(f"tool_{i}", "does something useful " * 5,
                 {"type": "object", "properties": {"path": {"type": "string"}}})
        for i in range(10)
    ]
    messages = [Message.system("You are a careful coding agent. " * 60)]
    for turn in range(6):
        messages.append(Message.user(f"step {turn}: please look at module_{turn}.py " * 10))
        messages.append(Message.assistant("I will read the file and fix the bug. " * 8))
    return ChatRequest(messages, tools=tools)


def cached_answer() -> ChatResponse:
    return ChatResponse("Here is the fix: " + "x = compute(y)\n" * 120, [], "stop",
                        Usage(1500, 400, 1900), "scripted-model")


async def _cache_figures(folder: Path) -> list[Figure]:
    request = typical_request()
    config = BackendConfig(base_url="http://127.0.0.1:9/v1", model="scripted-model",
                           api_key_env=None)
    figures = []
    for label, memory_entries in (("memory", 256), ("disk", 0)):
        cache = ResponseCache(folder / label, memory_entries=memory_entries)
        backend = OpenAICompatBackend("bench", config, api_key=None, cache=cache)
        key = backend._cache_key(request)
        cache.put(key, cached_answer())
        bare = diskcache.Cache(str(folder / f"bare-{label}"))
        bare.set(key, cached_answer().to_dict())

        async def ours(backend: OpenAICompatBackend = backend) -> float:
            start = time.perf_counter()
            async for chunk in backend.stream(request):
                assert chunk.cached
            return time.perf_counter() - start

        async def baseline(bare: diskcache.Cache = bare, key: str = key) -> float:
            start = time.perf_counter()
            assert bare.get(key) is not None
            return time.perf_counter() - start

        mine, base = await interleaved_async(ours, baseline, ROUNDS)
        value, reference = median_ms(mine), median_ms(base)
        figures.append(Figure(
            f"cache hit ({label} level) vs bare diskcache get", value, "ms", reference,
            "ratio <= 3", value / reference <= 3,
        ))
        await backend.aclose()
        cache.close()
        bare.close()
    return figures


async def _ttft_figure() -> Figure:
    script = {"steps": [{"times": "*", "reply": {"text": "Hello from the scripted model. " * 4,
                                                   "chunk_size": 8}}]}
    with ReplayServer(script) as server:
        config = BackendConfig(base_url=server.base_url, model="scripted-model",
                               api_key_env=None)
        backend = OpenAICompatBackend("bench", config, api_key=None)
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        request = ChatRequest([Message.user("hello")])

        async def ours() -> float:
            start = time.perf_counter()
            first = None
            async for chunk in backend.stream(request, use_cache=False):
                if first is None and chunk.kind == "text":
                    first = time.perf_counter() - start
            assert first is not None
            return first

        async def baseline() -> float:
            start = time.perf_counter()
            first = None
            stream = await client.chat.completions.create(
                model="scripted-model", messages=[{"role": "user", "content": "hello"}],
                max_tokens=4096, temperature=0.2, stream=True,
                stream_options={"include_usage": True},
            )
            async for raw in stream:
                if first is None and raw.choices and raw.choices[0].delta.content:
                    first = time.perf_counter() - start
            assert first is not None
            return first

        for _ in range(5):  # warm both connection pools
            await ours()
            await baseline()
        mine, base = await interleaved_async(ours, baseline, TTFT_ROUNDS)
        await backend.aclose()
        await client.close()
    value, reference = median_ms(mine), median_ms(base)
    return Figure("time to first token vs bare openai client", value, "ms", reference,
                  "ratio <= 1.2", value / reference <= 1.2)


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory() as folder:
        figures = asyncio.run(_cache_figures(Path(folder)))
    figures.append(asyncio.run(_ttft_figure()))
    return figures
