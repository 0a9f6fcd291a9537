"""`agentls ask PROMPT`: one prompt, one streamed answer. No tools, nothing written.

Useful to check that a backend works before pointing the agent at it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from agentls.cli import exitcodes
from agentls.llm.backend import BackendError, RetryNotice
from agentls.llm.messages import ChatRequest, Message
from agentls.settings import config

_NO_BACKEND_KINDS = {"auth", "connection", "model_not_found"}


def exit_code_for(error: BackendError) -> int:
    # A stream cut mid-answer came from a server that was reachable: a backend error.
    unusable = error.kind in _NO_BACKEND_KINDS and error.partial is None
    return exitcodes.NO_BACKEND if unusable else exitcodes.BACKEND_ERROR


def print_retry(notice: RetryNotice) -> None:
    print(
        f"retry {notice.attempt}/{notice.max_retries} in {notice.delay:.1f} s: "
        f"{notice.reason.replace('_', ' ')}",
        file=sys.stderr,
        flush=True,
    )


def run_ask(args: argparse.Namespace, workspace: Path) -> int:
    if args.prompt == "-":
        # Bytes, decoded leniently: a pipe of another encoding must not end in a traceback.
        prompt = sys.stdin.buffer.read().decode("utf-8-sig", errors="replace")
    else:  # undecodable bytes of an argument arrive as surrogates, which JSON cannot carry
        prompt = args.prompt.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if not prompt.strip():
        where = "stdin" if args.prompt == "-" else "the command line"
        print(f"agentls ask: the prompt from {where} is empty; write what to ask, like "
              "`agentls ask \"Say hello\"`", file=sys.stderr)
        return exitcodes.USAGE
    try:
        loaded = config.load(workspace)
        settings = loaded.settings
        for notice in loaded.notices:  # an untrusted project file's left-out keys
            print(f"agentls ask: warning: {notice}", file=sys.stderr)
        if args.backend and args.backend not in settings.backends:
            names = ", ".join(sorted(settings.backends))
            print(f"agentls ask: no backend named {args.backend!r} is configured (configured: "
                  f"{names}); add it with `agentls config set backends.{args.backend}.base_url "
                  "URL`, or pick a configured one", file=sys.stderr)
            return exitcodes.NO_BACKEND
        if args.backend:
            settings = config.load(workspace, flags={"backend": args.backend}).settings
    except config.ConfigError as exc:
        print(f"agentls ask: {exc}", file=sys.stderr)
        return exitcodes.CONFIG_ERROR
    if settings.active_backend.type != "openai":
        print(f"agentls ask: backend {settings.backend!r} is the "
              f"{settings.active_backend.type} agent CLI, which edits files itself; "
              "`agentls ask` needs a model server: use that CLI through `agentls run` or "
              "`agentls loop`, or pick a model server with --backend", file=sys.stderr)
        return exitcodes.USAGE
    messages = [Message.system(args.system)] if args.system else []
    messages.append(Message.user(prompt))
    request = ChatRequest(messages, model=args.model)
    return asyncio.run(_ask(settings, request, use_cache=not args.no_cache))


async def _ask(settings: config.Settings, request: ChatRequest, *, use_cache: bool) -> int:
    from agentls.llm.pool import BackendPool

    pool = BackendPool(settings)
    try:
        backend = pool.get()
        async for chunk in backend.stream(request, on_retry=print_retry, use_cache=use_cache):
            if chunk.kind == "text":
                sys.stdout.write(chunk.text)
                sys.stdout.flush()
            elif chunk.kind == "done" and chunk.response is not None:
                usage = chunk.response.usage
                note = " (cached)" if chunk.cached else ""
                print(file=sys.stdout)
                print(
                    f"[{backend.name}/{chunk.response.model or backend.model}] "
                    f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion "
                    f"tokens{note}",
                    file=sys.stderr,
                )
        return exitcodes.OK
    except BackendError as exc:
        if exc.partial is not None:
            print(file=sys.stdout)
        print(f"agentls ask: {exc}\nwhat to do: {exc.hint}", file=sys.stderr)
        return exit_code_for(exc)
    finally:
        await pool.aclose()
