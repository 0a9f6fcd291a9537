"""Inline completion (``textDocument/inlineCompletion``) on a 5,000-line file, against the
scripted model server (not a real model; it answers at once unless a phase slows it).

Times are taken from outside the server, so each includes the JSON-RPC pipe and, for the
model side, the HTTP request: the bench process notes when it sends the LSP request, the
scripted server (in this process, same clock) notes when the FIM request arrived and when the
last event of its stream left. Figures:

- request -> model request received (median): the server's work before the model is asked;
- model's last event -> answer received (median): its work after the model is done;
- a typed-through hit (a character typed that matches the suggestion): request -> answer;
- a superseded stream: the next keystroke's request sent -> the model server sees the older
  stream closed;
- 30 keystrokes a second for 10 s (didChange + an Automatic request each, the default
  debounce): the most FIM requests in flight at once, and the server's CPU time per second;
- the whole request against a bare pygls server forwarding the same FIM request
  (bench/bare_fim_server.py), interleaved.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from agentls.devtools.replay.command import ReplayServer
from agentls.engine.inline.cursor_context import CHARS_PER_TOKEN, PREFIX_SHARE, SUFFIX_SHARE
from bench.bench_lsp import OURS, start, stop
from bench.harness import Figure, ms

LINES = 5_000
CURSOR_LINE = 2_500
WARMUP = 20
ROUNDS = 200
TYPED_ROUNDS = 100
SUPERSEDED_ROUNDS = 30
STORM_KEYS_PER_S, STORM_SECONDS = 30, 10
CONTEXT_TOKENS = 1536  # completion.context_tokens's default: the bare server's windows match
INSTANT = {"steps": [{"times": "*", "reply": {"text": "value + 1"}}]}
SLOW_THEN_INSTANT = {"steps": [
    {"match": {"prompt": "/= $/"}, "times": "*",
     "reply": {"text": "x" * 300, "chunk_size": 1, "delay_s": 0.02}},
    {"times": "*", "reply": {"text": "value + 1"}}]}
STORM = {"steps": [{"times": "*", "reply": {"text": "value + 1", "chunk_size": 1,
                                            "delay_s": 0.005}}]}


def document() -> str:
    return "".join(f"value_{i} = compute({i})  # line {i}\n" for i in range(LINES))


def options(model: ReplayServer) -> dict[str, Any]:
    return {"backend": "scripted",
            "backends": {"scripted": {"base_url": model.base_url, "model": "scripted-model",
                                      "api_key_env": None}},
            "cache": {"enabled": False}, "retry": {"max_retries": 0},
            "completion": {"model": "scripted-model"}}


class Doc:
    """One open document on one client, edited at the cursor line."""

    def __init__(self, client: LanguageClient, uri: str, text: str) -> None:
        self.client, self.uri, self.version = client, uri, 1
        self.line_text = ""
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri, "python", 1, text)))

    def set_line(self, text: str) -> None:
        """Replace the cursor line's content (one incremental change)."""
        self.version += 1
        old = len(self.line_text)
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
            content_changes=[lsp.TextDocumentContentChangePartial(
                range=lsp.Range(start=lsp.Position(line=CURSOR_LINE, character=0),
                                end=lsp.Position(line=CURSOR_LINE, character=old)),
                text=text)]))
        self.line_text = text

    def type(self, chars: str) -> None:
        self.version += 1
        at = lsp.Position(line=CURSOR_LINE, character=len(self.line_text))
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
            content_changes=[lsp.TextDocumentContentChangePartial(
                range=lsp.Range(start=at, end=at), text=chars)]))
        self.line_text += chars

    def ask(self, automatic: bool = False) -> asyncio.Future[Any]:
        kind = (lsp.InlineCompletionTriggerKind.Automatic if automatic
                else lsp.InlineCompletionTriggerKind.Invoked)
        return asyncio.ensure_future(self.client.text_document_inline_completion_async(
            lsp.InlineCompletionParams(
                text_document=lsp.TextDocumentIdentifier(uri=self.uri),
                position=lsp.Position(line=CURSOR_LINE, character=len(self.line_text)),
                context=lsp.InlineCompletionContext(trigger_kind=kind))))


def text_of(result: Any) -> str:
    items = result.items if isinstance(result, lsp.InlineCompletionList) else result or []
    text = items[0].insert_text if items else ""
    return text if isinstance(text, str) else text.value


async def _ended_after(model: ReplayServer, count: int) -> float:
    """The time of the stream end number ``count`` (waiting for the server thread to note it)."""
    for _ in range(2000):
        ends = model.stream_ends
        if len(ends) > count:
            return ends[count].time
        await asyncio.sleep(0.0005)
    raise RuntimeError("the scripted model server never finished the stream")


async def _latency(model: ReplayServer, ours: Doc, bare: Doc) -> list[Figure]:
    before_sent, before_sent_bare, after_last, whole, whole_bare = [], [], [], [], []
    for i in range(WARMUP + ROUNDS):
        for doc in (bare, ours):
            doc.set_line(f"result_{i} = ")
        await asyncio.sleep(0.01)  # the change applied: the request alone is timed
        ends = len(model.stream_ends)
        requests = len(model.requests)
        started = time.time()
        answer = text_of(await bare.ask())
        took_bare = time.time() - started
        assert answer == "value + 1", answer
        received_bare = model.requests[requests].time - started
        await _ended_after(model, ends)
        ends += 1
        requests = len(model.requests)
        started = time.time()
        answer = text_of(await ours.ask())
        answered = time.time()
        assert answer == "value + 1", answer
        received = model.requests[requests].time
        last = await _ended_after(model, ends)
        if i >= WARMUP:
            before_sent.append(received - started)
            before_sent_bare.append(received_bare)
            after_last.append(answered - last)
            whole.append(answered - started)
            whole_bare.append(took_bare)
    sent, tail = ms(statistics.median(before_sent)), ms(statistics.median(after_last))
    sent_bare = ms(statistics.median(before_sent_bare))
    mine, base = ms(statistics.median(whole)), ms(statistics.median(whole_bare))
    return [
        Figure(f"inline completion, {LINES:,}-line file: request -> FIM request at the model "
               "(median; baseline: the bare server's)", sent, "ms", sent_bare, goal="<= 3 ms",
               met=sent <= 3),
        Figure("inline completion: the model's last event -> answer at the client (median)",
               tail, "ms", goal="<= 2 ms", met=tail <= 2),
        Figure("inline completion, whole request vs a bare pygls server forwarding the same "
               "FIM request (median)", mine, "ms", base, goal="ratio <= 1.2",
               met=mine <= 1.2 * base),
    ]


async def _typed_through(model: ReplayServer, ours: Doc) -> Figure:
    samples, floor = [], []
    unopened = Doc.__new__(Doc)
    unopened.client, unopened.uri, unopened.line_text = ours.client, ours.uri + ".unopened", ""
    for i in range(TYPED_ROUNDS):
        ours.set_line(f"typed_{i} = ")
        assert text_of(await ours.ask()) == "value + 1"
        requests = len(model.requests)
        ours.type("v")
        await asyncio.sleep(0.01)
        started = time.perf_counter()
        assert text_of(await unopened.ask()) == ""  # answered at once: the round trip's floor
        floor.append(time.perf_counter() - started)
        started = time.perf_counter()
        answer = text_of(await ours.ask())
        samples.append(time.perf_counter() - started)
        assert answer == "alue + 1" and len(model.requests) == requests, answer
    value = ms(statistics.median(samples))
    return Figure("inline completion: typed-through hit, request -> answer, no model call "
                  "(median; baseline: an unopened document's empty answer, the round trip's "
                  "floor)", value, "ms", ms(statistics.median(floor)), goal="<= 1 ms",
                  met=value <= 1)


async def _superseded(model: ReplayServer, ours: Doc) -> Figure:
    model.load(SLOW_THEN_INSTANT)
    samples = []
    for i in range(SUPERSEDED_ROUNDS):
        ours.set_line(f"slow_{i} = ")
        requests = len(model.requests)
        first = ours.ask()
        while len(model.requests) == requests:
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.03)  # streaming
        closed = len(model.closed_streams)
        keystroke = time.time()
        ours.type("q")
        second = ours.ask()
        while len(model.closed_streams) == closed:
            await asyncio.sleep(0.0005)
        samples.append(model.closed_streams[closed].time - keystroke)
        assert text_of(await first) == "" and text_of(await second) == "value + 1"
    value = ms(statistics.median(samples))
    return Figure("inline completion: the next keystroke -> the superseded FIM stream closed "
                  "at the model (median)", value, "ms", goal="<= 5 ms", met=value <= 5)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _storm(model: ReplayServer, ours: Doc, pid: int) -> list[Figure]:
    model.load(STORM)
    ours.set_line("storm = ")
    await asyncio.sleep(0.2)
    model.reset_in_flight()
    requests = len(model.requests)
    cpu = _cpu_seconds(pid)
    started = time.perf_counter()
    pending = []
    for n in range(STORM_KEYS_PER_S * STORM_SECONDS):
        ours.type("abcdefghij"[n % 10])
        pending.append(ours.ask(automatic=True))
        await asyncio.sleep(max(0.0, started + (n + 1) / STORM_KEYS_PER_S - time.perf_counter()))
    results = await asyncio.gather(*pending)
    elapsed = time.perf_counter() - started
    share = 100 * (_cpu_seconds(pid) - cpu) / elapsed
    most = model.most_in_flight()
    assert text_of(results[-1]) == "value + 1", results[-1]
    asked = len(model.requests) - requests
    return [
        Figure(f"inline completion, {STORM_KEYS_PER_S} keystrokes/s for {STORM_SECONDS} s: most "
               f"FIM requests in flight ({asked} sent)", most, "requests", goal="<= 1",
               met=most <= 1),
        Figure(f"inline completion, {STORM_KEYS_PER_S} keystrokes/s for {STORM_SECONDS} s: "
               "server CPU", share, "% of a core", goal="<= 20 %", met=share <= 20),
    ]


async def _run(root: Path) -> list[Figure]:
    text = document().replace(f"value_{CURSOR_LINE} = compute({CURSOR_LINE})  # line "
                              f"{CURSOR_LINE}\n", "\n")
    (root / "big.py").write_text(text)
    uri = (root / "big.py").as_uri()
    prefix_chars = int(CONTEXT_TOKENS * PREFIX_SHARE * CHARS_PER_TOKEN)
    suffix_chars = int(CONTEXT_TOKENS * SUFFIX_SHARE * CHARS_PER_TOKEN)
    with ReplayServer(INSTANT) as model:
        ours, _ = await start(OURS, root, options(model))
        bare, _ = await start([sys.executable, "-m", "bench.bare_fim_server", model.base_url,
                               "scripted-model", str(prefix_chars), str(suffix_chars)], root)
        try:
            mine, theirs = Doc(ours, uri, text), Doc(bare, uri, text)
            figures = await _latency(model, mine, theirs)
            figures.append(await _typed_through(model, mine))
            figures.append(await _superseded(model, mine))
            assert ours._server is not None
            figures += await _storm(model, mine, ours._server.pid)
        finally:
            await stop(ours)
            await stop(bare)
    return figures


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        return asyncio.run(_run(root))


if __name__ == "__main__":
    for figure in run():
        print(figure)
