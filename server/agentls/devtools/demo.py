"""`make demo`: real requests through the real backend layer, answered by a SCRIPTED model.

No real model is involved: the scripted model server (agentls.devtools.replay) speaks the
OpenAI HTTP API and answers from devtools/scripts/demo.yaml.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.panel import Panel

from agentls.config import BackendConfig, CacheConfig, Settings
from agentls.devtools.replay import ReplayServer
from agentls.llm.backend import BackendError, RetryNotice
from agentls.llm.cache import ResponseCache
from agentls.llm.messages import ChatRequest, Message
from agentls.llm.pool import BackendPool

SCRIPT = Path(__file__).resolve().parent / "scripts" / "demo.yaml"

console = Console(highlight=False)


def show_retry(notice: RetryNotice) -> None:
    console.print(
        f"  [yellow]retry {notice.attempt}/{notice.max_retries} in {notice.delay:.1f} s: "
        f"{notice.reason.replace('_', ' ')}[/yellow]"
    )


async def ask(pool: BackendPool, title: str, prompt: str) -> None:
    console.print(f"\n[bold]{title}[/bold]  [dim]user:[/dim] {prompt}")
    request = ChatRequest([Message.user(prompt)])
    start = time.perf_counter()
    first_token: float | None = None
    async for chunk in pool.get().stream(request, on_retry=show_retry):
        if chunk.kind == "text":
            if first_token is None:
                first_token = time.perf_counter() - start
                console.print("  [dim]model:[/dim] ", end="")
            console.print(chunk.text, end="", markup=False)
        elif chunk.kind == "done" and chunk.response is not None:
            usage = chunk.response.usage
            source = "[green]cache hit[/green]" if chunk.cached else "live from the server"
            console.print(
                f"\n  [dim]{source}; first token after {1000 * (first_token or 0):.0f} ms, "
                f"total {1000 * (time.perf_counter() - start):.0f} ms; usage "
                f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion "
                f"tokens[/dim]"
            )


async def demo() -> int:
    console.print(Panel.fit(
        "AgentLS demo. The model here is [bold]SCRIPTED[/bold] "
        "(agentls.devtools.replay): a real OpenAI-compatible HTTP server replaying\n"
        f"{SCRIPT.name}, not a real model. Everything else is the real code path:\n"
        "openai client, streaming, retries, response cache.",
        title="scripted model",
    ))
    with ReplayServer(SCRIPT) as server, tempfile.TemporaryDirectory() as folder:
        console.print(f"scripted model server listening on {server.base_url}")
        settings = Settings(
            backend="scripted",
            backends={"scripted": BackendConfig(
                base_url=server.base_url, model="scripted-model", api_key_env=None)},
            cache=CacheConfig(enabled=True),
        )
        cache = ResponseCache(Path(folder) / "responses")
        pool = BackendPool(settings, cache=cache)
        try:
            await ask(pool, "1. Streamed text", "hello")
            await ask(pool, "2. A rate-limited request, retried", "show me a rate limit")
            await ask(pool, "3. A cacheable request", "cache demo: what is 6 x 7?")
            await ask(pool, "4. The same request again", "cache demo: what is 6 x 7?")
        except BackendError as exc:
            console.print(f"\n[red]demo failed: {exc}[/red]\nwhat to do: {exc.hint}")
            return 1
        finally:
            await pool.aclose()
        statuses = [r.status for r in server.requests]
        console.print(
            f"\nThe scripted server received {len(statuses)} chat requests "
            f"(HTTP statuses {statuses}); request 4 never reached it."
        )
    return 0


def main() -> int:
    return asyncio.run(demo())


if __name__ == "__main__":
    sys.exit(main())
