"""The inline completion fast path over real HTTP (the openai client) against the scripted
model server (not a real model): FIM modes and their fallbacks, cancel-first, the caches,
a model server that is down or slow."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentls.devtools.replay.command import ReplayServer
from agentls.engine.inline.completer import CompletionRequest, InlineCompleter
from agentls.llm.fim import FimClient
from agentls.settings.models import CompletionConfig

DOC = "def add(a, b):\n    \n\nprint(add(1, 2))\n"
CURSOR = DOC.index("    \n") + 4


@pytest.fixture
def model() -> Iterator[ReplayServer]:
    with ReplayServer({"steps": []}) as running:
        yield running


def completer(base_url: str, model_name: str = "scripted-model", **config: Any
              ) -> tuple[InlineCompleter, list[tuple[str, str]]]:
    statuses: list[tuple[str, str]] = []
    engine = InlineCompleter(lambda status, message: statuses.append((status, message)))
    settings = CompletionConfig(model=model_name, debounce_ms=0, **config)
    engine.configure(settings, FimClient("scripted", base_url, None, settings.timeout_s),
                     model_name)
    return engine, statuses


def request(text: str = DOC, offset: int = CURSOR, *, automatic: bool = False,
            uri: str = "file:///p/calc.py") -> CompletionRequest:
    return CompletionRequest(uri=uri, path="calc.py", repo="p", text=text, offset=offset,
                             automatic=automatic, unit="    ", eol="\n")


def posted(model: ReplayServer, path: str = "/v1/completions") -> list[Any]:
    return [r for r in model.requests if r.path == path]


async def test_fim_with_suffix(model: ReplayServer) -> None:
    model.load({"steps": [{"reply": {"text": "return a + b"}}]})
    engine, _ = completer(model.base_url)
    assert await engine.complete(request()) == "return a + b"
    (sent,) = posted(model)
    assert sent.body["prompt"] == DOC[:CURSOR] and sent.body["suffix"] == DOC[CURSOR:]
    await engine.aclose()


async def test_server_refusing_suffix_gets_the_model_template(model: ReplayServer) -> None:
    model.load({"completions_suffix": False, "models": "*",
                "steps": [{"times": "*", "reply": {"text": "return a + b<|file_sep|>x"}}]})
    engine, _ = completer(model.base_url, "qwen2.5-coder:1.5b")
    assert await engine.complete(request()) == "return a + b"
    refused, templated = posted(model)
    assert refused.status == 400 and "suffix" in refused.body
    assert "suffix" not in templated.body
    assert templated.body["prompt"] == (
        f"<|fim_prefix|>{DOC[:CURSOR]}<|fim_suffix|>{DOC[CURSOR:]}<|fim_middle|>")
    assert "<|file_sep|>" in templated.body["stop"]
    # remembered: the next request goes straight to the template
    await engine.complete(request(offset=CURSOR - 1))
    assert "suffix" not in posted(model)[-1].body and len(posted(model)) == 3
    await engine.aclose()


async def test_no_template_known_falls_back_to_chat(model: ReplayServer) -> None:
    model.load({"completions_suffix": False, "steps": [
        {"match": {"system": "code completion engine"}, "reply": {"text": "return a + b"}}]})
    engine, _ = completer(model.base_url, "scripted-model")
    assert await engine.complete(request()) == "return a + b"
    (chat,) = posted(model, "/v1/chat/completions")
    assert "<CURSOR>" in chat.body["messages"][-1]["content"]
    await engine.aclose()


async def test_template_setting_without_suffix(model: ReplayServer) -> None:
    model.load({"models": "*", "steps": [{"reply": {"text": "return a + b"}}]})
    engine, _ = completer(model.base_url, "my-model", fim="template", template="starcoder2")
    assert await engine.complete(request()) == "return a + b"
    (sent,) = posted(model)
    assert sent.body["prompt"].startswith("<fim_prefix>") and "suffix" not in sent.body
    await engine.aclose()


async def test_answered_at_the_finish_chunk_the_end_read_after(model: ReplayServer) -> None:
    # Cut after the chunk that finishes the choice: the answer was whole there, so it is
    # given; the stream's end is read (here: found cut) after it.
    model.load({"steps": [{"reply": {"text": "return a + b", "chunk_size": 100},
                           "drop_after": 2}]})
    engine, statuses = completer(model.base_url)
    assert await engine.complete(request()) == "return a + b"
    assert all(status != "error" for status, _ in statuses)
    await engine.aclose()


async def test_a_finished_stream_read_to_its_end_keeps_the_connection(
        model: ReplayServer) -> None:
    model.load({"steps": [{"times": "*", "reply": {"text": "return a + b"}}]})
    engine, _ = completer(model.base_url)
    assert await engine.complete(request()) == "return a + b"
    while engine._ending or len(model.stream_ends) < 1:
        await asyncio.sleep(0.005)
    other = DOC.replace("add", "plus")
    assert await engine.complete(request(other, other.index("    \n") + 4)) == "return a + b"
    first, second = posted(model)
    assert first.connection == second.connection  # kept alive: no new connection
    await engine.aclose()


async def test_a_newer_keystroke_closes_the_older_stream(model: ReplayServer) -> None:
    model.load({"steps": [
        {"match": {"prompt": "/    $/"}, "reply": {"text": "x" * 400, "chunk_size": 1,
                                                    "delay_s": 0.02}},
        {"match": {"prompt": "/    r$/"}, "reply": {"text": "eturn a + b"}}]})
    engine, _ = completer(model.base_url)
    first = asyncio.ensure_future(engine.complete(request()))
    while not model.requests:
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.05)  # streaming now
    typed = DOC[:CURSOR] + "r" + DOC[CURSOR:]
    second_started = time.time()
    assert await engine.complete(request(typed, CURSOR + 1)) == "eturn a + b"
    assert await first == ""
    (closed,) = model.closed_streams
    assert closed.events_sent < closed.events_total
    assert closed.time - second_started < 2.0  # at once, not after the 8 s stream (a loaded CI)
    assert model.most_in_flight() == 1
    await engine.aclose()


async def test_typed_through_and_lru_answer_without_the_model(model: ReplayServer) -> None:
    end = len(DOC) - 1
    model.load({"steps": [{"match": {"suffix": "print"}, "reply": {"text": "return a + b"}},
                          {"match": {"suffix": "/^\\n$/"}, "reply": {"text": "# done"}}]})
    engine, _ = completer(model.base_url)
    assert await engine.complete(request()) == "return a + b"
    for typed in ("r", "re", "retu", "return a"):
        text = DOC[:CURSOR] + typed + DOC[CURSOR:]
        assert await engine.complete(request(text, CURSOR + len(typed))) == \
            "return a + b"[len(typed):]
    # typed something else: not served from the suggestion
    other = DOC[:CURSOR] + "x" + DOC[CURSOR:]
    assert engine._typed_through(engine._slots["file:///p/calc.py"],
                                 request(other, CURSOR + 1)) is None
    # back where it was (backspace): still the suggestion on screen
    assert await engine.complete(request()) == "return a + b"
    # elsewhere, then back: the LRU
    assert await engine.complete(request(offset=end)) == "# done"
    assert await engine.complete(request()) == "return a + b"
    assert len(posted(model)) == 2
    assert engine.counters.typed_through == 5 and engine.counters.lru_hits == 1
    await engine.aclose()


async def test_keystroke_storm_one_request_in_flight(model: ReplayServer) -> None:
    # Each answer streams for about a second (a character every 10 ms: the server sees a
    # closed stream within 10 ms), so on a loaded machine too a keystroke comes before any
    # answer ends.
    answer = "value + " + " + ".join(["1"] * 40)
    model.load({"steps": [{"times": "*", "reply": {"text": answer, "chunk_size": 1,
                                                   "delay_s": 0.01}}]})
    engine, _ = completer(model.base_url)
    engine.config = engine.config.model_copy(update={"debounce_ms": 20})
    text, offset, pending = DOC, CURSOR, []
    for _ in range(60):  # 30 keystrokes a second for 2 s
        text, offset = text[:offset] + "z" + text[offset:], offset + 1
        pending.append(asyncio.ensure_future(engine.complete(request(text, offset,
                                                                     automatic=True))))
        await asyncio.sleep(1 / 30)
    results = await asyncio.gather(*pending)
    assert results[-1] == answer
    assert model.most_in_flight() == 1
    assert all(r == "" for r in results[:-2])  # superseded ones answer nothing
    await engine.aclose()


async def test_model_server_down_one_status_change() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    engine, statuses = completer(f"http://127.0.0.1:{port}/v1")
    started = time.monotonic()
    for n in range(5):
        assert await engine.complete(request(offset=CURSOR - n)) == ""
    assert time.monotonic() - started < 5
    errors = [s for s in statuses if s[0] == "error"]
    assert len(errors) == 1 and "cannot reach" in errors[0][1]
    assert [s[0] for s in statuses] == ["idle", "error"]
    await engine.aclose()


async def test_slow_model_gives_up_within_the_timeout(model: ReplayServer) -> None:
    model.load({"steps": [{"times": "*", "reply": {"text": "late", "first_delay_s": 5}}]})
    engine, statuses = completer(model.base_url, timeout_s=0.5)
    started = time.monotonic()
    assert await engine.complete(request()) == ""
    assert time.monotonic() - started < 1.5
    assert statuses[-1][0] == "error" and "timeout_s" in statuses[-1][1]
    await engine.aclose()


async def test_whole_file_or_only_suffix_from_the_model(model: ReplayServer) -> None:
    model.load({"steps": [{"reply": {"text": DOC[:CURSOR] + "return a + b" + DOC[CURSOR:]}},
                          {"reply": {"text": DOC[CURSOR:]}}]})
    engine, _ = completer(model.base_url)
    assert await engine.complete(request()) == "return a + b"
    assert await engine.complete(request(offset=CURSOR - 1)) == ""
    await engine.aclose()
