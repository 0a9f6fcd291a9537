"""`agentls acp` (the Agent Client Protocol front door), measured as an editor sees it.

- First ``session/update`` text chunk after the model's first token: the scripted model
  server notes when it writes each streamed event (``ReplayServer.stream_times``, same clock
  as this process); the client (the official Python SDK's client side, in this process)
  notes when the first ``agent_message_chunk`` arrives. Goal: <= 5 ms (median of
  ``TURN_ROUNDS`` follow-up turns on one session; the model's first text event comes
  ``TTFT_S`` after its role event, so the figure is not muddled by the request's own path).
- Cold start: spawn of ``agentls acp`` to its ``initialize`` answer, against spawn of
  ``agentls serve`` to its ``initialize`` result, interleaved. Goal: ratio <= 1.3.

Run alone: ``flock /work/heavy.lock .venv/bin/python -m bench.run bench.bench_acp``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

from acp.interfaces import Client
from acp.schema import ClientCapabilities, FileSystemCapabilities
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

import acp
from agentls.devtools.replay.command import ReplayServer
from bench.harness import Figure, median_ms

TURN_ROUNDS = 15
COLD_ROUNDS = 9
TTFT_S = 0.15
FIRST_CHUNK_GOAL_MS = 5.0
COLD_GOAL = 1.3
AGENTLS = [sys.executable, "-P", "-m", "agentls"]
AGENTS_ACP = [*AGENTLS, "acp"]


class _FirstChunk:
    """A client that notes when the first message chunk of a turn arrives."""

    def __init__(self) -> None:
        self.arrived: float | None = None

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if update.session_update == "agent_message_chunk" and self.arrived is None:
            self.arrived = time.perf_counter()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("session/request_permission")


def _env(model: ReplayServer) -> dict[str, str]:
    return {**os.environ,
            "AGENTLS_BACKENDS__SCRIPTED__BASE_URL": model.base_url,
            "AGENTLS_BACKENDS__SCRIPTED__MODEL": "scripted-model",
            "AGENTLS_BACKENDS__SCRIPTED__API_KEY_ENV": "AGENTLS_BENCH_KEY",
            "AGENTLS_BENCH_KEY": "scripted-bench-key",
            "AGENTLS_BACKEND": "scripted", "AGENTLS_CACHE__ENABLED": "false",
            "AGENTLS_RETRY__MAX_RETRIES": "0"}


async def _first_chunk_figure(root: Path) -> Figure:
    script = {"steps": [{"times": "*", "reply": {
        "text": "Hello from the scripted model, streamed in pieces.", "chunk_size": 8,
        "delay_s": TTFT_S}}]}
    with ReplayServer(script) as model:
        client = _FirstChunk()
        async with acp.spawn_agent_process(cast(Client, client), *AGENTS_ACP,
                                           env=_env(model), cwd=str(root)) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                  client_capabilities=ClientCapabilities(
                                      fs=FileSystemCapabilities()))
            session = await conn.new_session(cwd=str(root), mcp_servers=[])
            gaps: list[float] = []
            for turn in range(TURN_ROUNDS + 2):
                client.arrived = None
                await conn.prompt(session_id=session.session_id,
                                  prompt=[acp.text_block(f"hello {turn}")])
                written = model.stream_times[-1]
                assert client.arrived is not None and len(written) > 1
                if turn >= 2:  # the first turns import and open what later turns reuse
                    gaps.append(client.arrived - written[1])  # [0] is the role event
    value = median_ms(gaps)
    return Figure(f"acp: first session/update text chunk after the model's first token "
                  f"(median of {TURN_ROUNDS} turns)", value, "ms", None,
                  f"<= {FIRST_CHUNK_GOAL_MS:g} ms", value <= FIRST_CHUNK_GOAL_MS)



async def _acp_cold(root: Path) -> float:
    started = time.perf_counter()
    async with acp.spawn_agent_process(cast(Client, _FirstChunk()), *AGENTS_ACP,
                                       cwd=str(root)) as (conn, _):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        return time.perf_counter() - started


async def _serve_cold(root: Path) -> float:
    client = LanguageClient("agentls-bench", "0")
    started = time.perf_counter()
    await client.start_io(*AGENTLS, "serve", cwd=str(root))
    await client.initialize_async(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(), root_uri=root.as_uri()))
    elapsed = time.perf_counter() - started
    client.initialized(lsp.InitializedParams())
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return elapsed


async def _cold_start_figure(root: Path) -> Figure:
    await _acp_cold(root)  # both warm in the page cache
    await _serve_cold(root)
    mine, base = [], []
    for _ in range(COLD_ROUNDS):
        base.append(await _serve_cold(root))
        mine.append(await _acp_cold(root))
    value, reference = median_ms(mine), median_ms(base)
    return Figure("acp: cold start, `agentls acp` spawn to initialize answer vs `agentls serve`"
                  " spawn to initialize result", value, "ms", reference,
                  f"ratio <= {COLD_GOAL:g}", value / reference <= COLD_GOAL)


async def _figures() -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="agentls-bench-acp-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        (root / "main.py").write_text("print('hello')\n")
        figures = [await _first_chunk_figure(root)]
        figures.append(await _cold_start_figure(root))
        return figures


def run() -> list[Figure]:
    return asyncio.run(_figures())
