"""`make demo`: real requests through the real backend layer, answered by a SCRIPTED model.

No real model is involved: the scripted model server (agentls.devtools.replay) speaks the
OpenAI HTTP API and answers from devtools/scripts/demo.yaml, and, for the last part
(`agentls run` editing a sample project), from devtools/scripts/demo_run.yaml.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.panel import Panel

from agentls.base.python_child import agentls_argv
from agentls.devtools.replay.command import ReplayServer
from agentls.llm.backend import BackendError, RetryNotice
from agentls.llm.cache import ResponseCache
from agentls.llm.messages import ChatRequest, Message
from agentls.llm.pool import BackendPool
from agentls.settings.config import BackendConfig, CacheConfig, Settings

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
        "(agentls.devtools.replay): a real OpenAI-compatible HTTP server replaying "
        f"{SCRIPT.name}, not a real model. Everything else is the real code path: "
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


# --- `agentls run` on a sample project -------------------------------------------------------

RUN_SCRIPT = Path(__file__).resolve().parent / "scripts" / "demo_run.yaml"
SAMPLE_PROJECT = {
    "calc.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
    "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    "README.md": "# calc\n\nA tiny sample project for the AgentLS demo.\n",
}


def _agentls(args: list[str], env: dict[str, str], *,
             capture: bool) -> subprocess.CompletedProcess[str]:
    return subprocess.run(agentls_argv(*args), env=env, text=True,
                          capture_output=capture, check=False, stdin=subprocess.DEVNULL)


def run_section() -> int:
    """`agentls run` editing a copy of a sample project, as a person or CI would run it."""
    console.print(Panel.fit(
        "5. [bold]agentls run[/bold] on a sample project. The model is still "
        "[bold]SCRIPTED[/bold] "
        f"({RUN_SCRIPT.name}): the tool calls are replayed, but reading, editing, the diff and "
        "the atomic write to disk are the real engine and CLI.",
        title="scripted model",
    ))
    with ReplayServer(RUN_SCRIPT) as server, tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        project = root / "calc"
        project.mkdir()
        for name, text in SAMPLE_PROJECT.items():
            (project / name).write_text(text, encoding="utf-8")
        task = root / "task.txt"
        task.write_text("Please fix add in calc.py so the test passes.\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLS_", "OPENAI_"))}
        env.update({
            "XDG_CONFIG_HOME": str(root / "config"),  # the person's own settings stay out
            "XDG_CACHE_HOME": str(root / "cache"),
            "AGENTLS_BACKEND": "scripted",
            "AGENTLS_BACKENDS__SCRIPTED__BASE_URL": server.base_url,
            "AGENTLS_BACKENDS__SCRIPTED__MODEL": "scripted-model",
            "AGENTLS_BACKENDS__SCRIPTED__API_KEY_ENV": "none",
            "AGENTLS_CACHE__ENABLED": "false",
        })
        console.print(f"sample project copied to {project}\n")
        console.print("[bold]$ agentls run task.txt --dry-run[/bold]  "
                      "[dim](streams the answer, shows the diff, writes nothing)[/dim]")
        dry = _agentls(["run", str(task), "--cwd", str(project), "--dry-run"], env,
                       capture=False)
        unchanged = (project / "calc.py").read_text(encoding="utf-8") == SAMPLE_PROJECT["calc.py"]
        console.print(f"[dim]exit {dry.returncode}; calc.py unchanged on disk: {unchanged}[/dim]\n")

        console.print("[bold]$ agentls run task.txt --json[/bold]  "
                      "[dim](writes the change atomically, prints one JSON object)[/dim]")
        real = _agentls(["run", str(task), "--cwd", str(project), "--json"], env, capture=True)
        if real.returncode != 0:
            console.print(f"[red]agentls run failed (exit {real.returncode})[/red]\n{real.stderr}")
            return 1
        summary = json.loads(real.stdout)
        console.print_json(json.dumps({k: summary[k] for k in (
            "status", "stopReason", "exitCode", "backend", "model", "durationMs", "usage",
            "changes", "applied")}))
        console.print("calc.py on disk now:")
        console.print((project / "calc.py").read_text(encoding="utf-8"), markup=False)
    return 0


def main() -> int:
    from agentls.devtools.demo_lsp import lsp_section

    return asyncio.run(demo()) or run_section() or asyncio.run(lsp_section())


if __name__ == "__main__":
    sys.exit(main())
