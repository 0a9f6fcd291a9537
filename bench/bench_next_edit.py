"""Next-edit suggestions (``agentls/nextEdit``, the same path as ``textDocument/
copilotInlineEdit``) on a 5,000-line file, against the scripted model server (not a real
model: its ``rewrite`` replies rewrite the prompt's editable region at once).

Times are taken from outside the server, as in bench_completion: the bench process notes when
it sends the LSP request, the scripted server (same process, same clock) when the model
request arrived and when the last event of its stream left. Figures:

- request -> model request received (median): the server's work before the model is asked
  (the excerpt, the recent edits' diffs, the prompt);
- model's last event -> answer received (median): its work after (reading the rewrite,
  hunks, positions). The scripted model streams the rewrite in events of 16 characters 3 ms
  apart (faster than a 7B model on one GPU), so the server reads as they come, as it would
  from a real model, and stops at the region's end marker (the request's `stop`);
- both against a bare pygls server forwarding a plain /v1/completions request of about the
  same size, answered by a stream as long (bench/bare_fim_server.py, interleaved round by
  round): the floor of the pipe, pygls and the openai client on this machine. The bench's
  client decodes AgentLS's answer as the plain JSON an editor reads (``plain_results``):
  pygls's client would turn each object of an answer to a method it does not know into a
  namedtuple class of its own (~0.4 ms for one edit, the bench's cost, not the server's),
  while the bare server's standard answer is decoded by cattrs;
- the next keystroke -> the older model stream closed at the model (median);
- 30 keystrokes a second for 10 s (didChange + a request each, the default debounce): the
  most model requests in flight at once, and the server's CPU time per second.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient
from pygls.protocol import JsonRPCResponseMessage

from agentls.devtools.replay.command import ReplayServer
from bench.bench_completion import _cpu_seconds, _ended_after
from bench.bench_lsp import OURS, start, stop
from bench.harness import Figure, ms

LINES = 5_000
CURSOR_LINE = 2_500
WARMUP = 10
ROUNDS = 100
SUPERSEDED_ROUNDS = 30
STORM_KEYS_PER_S, STORM_SECONDS = 30, 10
BARE_PREFIX, BARE_SUFFIX = 1200, 550  # characters: about the region and context's budgets
INSTANT = {"steps": [
    {"match": {"prompt": "/### Instruction/"}, "times": "*",
     "reply": {"rewrite": [["compute(", "calculate("]], "chunk_size": 16, "delay_s": 0.003}},
    # the bare server's plain request: an answer as long, streamed the same way
    {"times": "*", "reply": {"text": "x = calculate(1)\n" * 100, "chunk_size": 16,
                             "delay_s": 0.003}}]}
SLOW = {"steps": [{"times": "*", "reply": {"rewrite": [["compute(", "calculate("]],
                                           "chunk_size": 2, "delay_s": 0.02}}]}
STORM = {"steps": [{"times": "*", "reply": {"rewrite": [["compute(", "calculate("]],
                                            "chunk_size": 16, "delay_s": 0.005}}]}


def document() -> str:
    return "".join(f"value_{i} = compute({i})  # line {i}\n" for i in range(LINES))


def options(model: ReplayServer, debounce_ms: int) -> dict[str, Any]:
    return {"backend": "scripted",
            "backends": {"scripted": {"base_url": model.base_url, "model": "scripted-model",
                                      "api_key_env": None}},
            "cache": {"enabled": False}, "retry": {"max_retries": 0},
            "next_edit": {"model": "scripted-model", "format": "zeta",
                          "debounce_ms": debounce_ms}}


class Doc:
    """One open document, edited at the cursor line."""

    def __init__(self, client: LanguageClient, uri: str, text: str) -> None:
        self.client, self.uri, self.version = client, uri, 1
        self.line_text = ""
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri, "python", 1, text)))

    def change(self, start: int, end: int, text: str) -> None:
        self.version += 1
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
            content_changes=[lsp.TextDocumentContentChangePartial(
                range=lsp.Range(start=lsp.Position(line=CURSOR_LINE, character=start),
                                end=lsp.Position(line=CURSOR_LINE, character=end)),
                text=text)]))

    def set_line(self, text: str) -> None:
        self.change(0, len(self.line_text), text)
        self.line_text = text

    def type(self, chars: str) -> None:
        self.change(len(self.line_text), len(self.line_text), chars)
        self.line_text += chars

    def ask(self) -> asyncio.Future[Any]:
        return asyncio.ensure_future(self.client.protocol.send_request_async(
            "agentls/nextEdit", {"textDocument": {"uri": self.uri, "version": self.version},
                                 "position": {"line": CURSOR_LINE,
                                              "character": len(self.line_text)}}))


class BareDoc(Doc):
    """The same document on the bare server, asked for an inline completion."""

    def ask(self) -> asyncio.Future[Any]:
        return asyncio.ensure_future(self.client.text_document_inline_completion_async(
            lsp.InlineCompletionParams(
                text_document=lsp.TextDocumentIdentifier(uri=self.uri),
                position=lsp.Position(line=CURSOR_LINE, character=len(self.line_text)),
                context=lsp.InlineCompletionContext(
                    trigger_kind=lsp.InlineCompletionTriggerKind.Invoked))))


def plain_results(client: LanguageClient) -> None:
    """Answers to methods pygls does not know kept as the decoded JSON (see the notes)."""
    client.protocol._converter.register_structure_hook(
        JsonRPCResponseMessage, lambda obj, cls: cls(**obj))


def edits_of(result: Any) -> list[Any]:
    edits = result["edits"] if isinstance(result, dict) else result.edits
    return list(edits)


async def _bare_round(model: ReplayServer, bare: BareDoc) -> tuple[float, float]:
    """One request to the bare server: (request -> model request, last event -> answer)."""
    ends, requests = len(model.stream_ends), len(model.requests)
    started = time.time()
    await bare.ask()
    answered = time.perf_counter()
    await _ended_after(model, ends)
    return model.requests[requests].time - started, answered - model.stream_times[-1][-1]


async def _latency(model: ReplayServer, doc: Doc, bare: BareDoc) -> list[Figure]:
    before_sent, after_last, bare_sent, bare_last = [], [], [], []
    for i in range(WARMUP + ROUNDS):
        doc.set_line(f"result_{i} = compute(value_{i})")
        bare.set_line(f"result_{i} = compute(value_{i})")
        await asyncio.sleep(0.01)  # the change applied: the request alone is timed
        sent_bare, last_bare = await _bare_round(model, bare)
        ends, requests = len(model.stream_ends), len(model.requests)
        started = time.time()
        answer = edits_of(await doc.ask())
        answered = time.perf_counter()
        assert answer, "the rewrite gave no suggestion"
        received = model.requests[requests].time
        await _ended_after(model, ends)
        last = model.stream_times[-1][-1]  # perf_counter of the last event it wrote
        if i >= WARMUP:
            before_sent.append(received - started)
            after_last.append(answered - last)
            bare_sent.append(sent_bare)
            bare_last.append(last_bare)
    sent, tail = ms(statistics.median(before_sent)), ms(statistics.median(after_last))
    return [
        Figure(f"next edit, {LINES:,}-line file: request -> model request at the model "
               "(median; baseline: the bare server's)", sent, "ms",
               ms(statistics.median(bare_sent)), goal="<= 3 ms", met=sent <= 3),
        Figure("next edit: the model's last event -> answer at the client (median; baseline: "
               "the bare server's)", tail, "ms", ms(statistics.median(bare_last)),
               goal="<= 2 ms", met=tail <= 2),
    ]


async def _superseded(model: ReplayServer, doc: Doc) -> Figure:
    model.load(SLOW)
    samples = []
    for i in range(SUPERSEDED_ROUNDS):
        doc.set_line(f"slow_{i} = compute({i})")
        requests = len(model.requests)
        first = doc.ask()
        while len(model.requests) == requests:
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.03)  # streaming
        closed = len(model.closed_streams)
        keystroke = time.time()
        doc.type("q")
        while len(model.closed_streams) == closed:
            await asyncio.sleep(0.0005)
        samples.append(model.closed_streams[closed].time - keystroke)
        assert edits_of(await first) == []
    value = ms(statistics.median(samples))
    return Figure("next edit: the next keystroke -> the older model stream closed at the "
                  "model (median)", value, "ms", goal="<= 5 ms", met=value <= 5)


async def _storm(model: ReplayServer, doc: Doc, pid: int) -> list[Figure]:
    model.load(STORM)
    doc.set_line("storm = compute(")
    await asyncio.sleep(0.2)
    model.reset_in_flight()
    requests = len(model.requests)
    cpu = _cpu_seconds(pid)
    started = time.perf_counter()
    pending = []
    for n in range(STORM_KEYS_PER_S * STORM_SECONDS):
        doc.type("abcdefghij"[n % 10])
        pending.append(doc.ask())
        await asyncio.sleep(max(0.0, started + (n + 1) / STORM_KEYS_PER_S - time.perf_counter()))
    results = await asyncio.gather(*pending)
    elapsed = time.perf_counter() - started
    share = 100 * (_cpu_seconds(pid) - cpu) / elapsed
    most = model.most_in_flight()
    assert edits_of(results[-1]), "the last keystroke's request gave no suggestion"
    asked = len(model.requests) - requests
    return [
        Figure(f"next edit, {STORM_KEYS_PER_S} keystrokes/s for {STORM_SECONDS} s: most model "
               f"requests in flight ({asked} sent)", most, "requests", goal="<= 1",
               met=most <= 1),
        Figure(f"next edit, {STORM_KEYS_PER_S} keystrokes/s for {STORM_SECONDS} s: server CPU",
               share, "% of a core", goal="<= 20 %", met=share <= 20),
    ]


async def _run(root: Path) -> list[Figure]:
    text = document()
    (root / "big.py").write_text(text)
    uri = (root / "big.py").as_uri()
    text = text.replace(f"value_{CURSOR_LINE} = compute({CURSOR_LINE})  # line {CURSOR_LINE}\n",
                        "\n")
    figures: list[Figure] = []
    with ReplayServer(INSTANT) as model:
        bare, _ = await start([sys.executable, "-m", "bench.bare_fim_server", model.base_url,
                               "scripted-model", str(BARE_PREFIX), str(BARE_SUFFIX), "768"], root)
        try:
            for debounce_ms, phases in ((0, "latency"), (150, "storm")):
                model.load(INSTANT)
                client, _ = await start(OURS, root, options(model, debounce_ms))
                plain_results(client)
                try:
                    doc = Doc(client, uri, text)
                    if phases == "latency":
                        figures += await _latency(model, doc, BareDoc(bare, uri, text))
                        figures.append(await _superseded(model, doc))
                    else:
                        assert client._server is not None
                        figures += await _storm(model, doc, client._server.pid)
                finally:
                    await stop(client)
        finally:
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
