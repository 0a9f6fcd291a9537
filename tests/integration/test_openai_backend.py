"""The real backend layer and the real `openai` client against the scripted model server."""

from __future__ import annotations

import http.server
import json
import logging
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentls.devtools.replay.command import ReplayServer
from agentls.llm.backend import BackendError, RetryNotice
from agentls.llm.cache import ResponseCache
from agentls.llm.messages import ChatChunk, ChatRequest, Message, ToolSpec
from agentls.llm.openai_compat import OpenAICompatBackend
from agentls.llm.retry import RetryPolicy
from agentls.settings.config import BackendConfig


class Clock:
    """Records the waits the retry policy asks for instead of sleeping them."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def make_backend(
    server: ReplayServer, clock: Clock
) -> AsyncIterator[Any]:
    made: list[OpenAICompatBackend] = []

    def make(
        *, cache: ResponseCache | None = None, base_url: str | None = None,
        api_key: str | None = "sk-test", model: str = "scripted-model",
    ) -> OpenAICompatBackend:
        config = BackendConfig(base_url=base_url or server.base_url, model=model,
                               api_key_env="OPENAI_API_KEY")
        backend = OpenAICompatBackend(
            "scripted", config, api_key=api_key, cache=cache,
            retry=RetryPolicy(sleep=clock.sleep, jitter=lambda: 0.0),
        )
        made.append(backend)
        return backend

    yield make
    for backend in made:
        await backend.aclose()


def hello() -> ChatRequest:
    return ChatRequest([Message.system("be brief"), Message.user("hello")])


async def collect(stream: AsyncIterator[ChatChunk]) -> list[ChatChunk]:
    return [chunk async for chunk in stream]


async def test_streaming_text_arrives_in_pieces(server: ReplayServer, make_backend: Any) -> None:
    server.load({"steps": [{"reply": {"text": "Hello there, person!", "chunk_size": 4}}]})
    chunks = await collect(make_backend().stream(hello()))
    texts = [c.text for c in chunks if c.kind == "text"]
    assert len(texts) == 5 and "".join(texts) == "Hello there, person!"
    done = chunks[-1]
    assert done.kind == "done" and done.response is not None
    assert done.response.text == "Hello there, person!"
    assert done.response.finish_reason == "stop"
    assert done.response.usage.prompt_tokens > 0 and done.response.usage.completion_tokens > 0
    assert not done.cached
    sent = server.requests[0].body
    assert sent["stream"] is True and sent["messages"][1] == {"role": "user", "content": "hello"}


async def test_parallel_tool_calls_split_across_chunks(
    server: ReplayServer, make_backend: Any
) -> None:
    server.load({"steps": [{"reply": {
        "text": "Reading both.",
        "chunk_size": 3,
        "interleave_tool_calls": True,
        "tool_calls": [
            {"id": "call_a", "name": "read_file", "arguments": {"path": "src/a.py"}},
            {"id": "call_b", "name": "search_text",
             "arguments": {"query": "def main", "regex": False}},
        ],
    }}]})
    tools = [ToolSpec("read_file", "read", {"type": "object"}),
             ToolSpec("search_text", "search", {"type": "object"})]
    chunks = await collect(make_backend().stream(ChatRequest([Message.user("go")], tools=tools)))
    calls = [c.tool_call for c in chunks if c.kind == "tool_call"]
    assert [(c.id, c.name) for c in calls if c] == [("call_a", "read_file"),
                                                     ("call_b", "search_text")]
    assert calls[0] is not None and calls[0].parsed_arguments() == {"path": "src/a.py"}
    assert calls[1] is not None
    assert calls[1].parsed_arguments() == {"query": "def main", "regex": False}
    response = chunks[-1].response
    assert response is not None and response.finish_reason == "tool_calls"
    assert server.requests[0].body["tools"][0]["function"]["name"] == "read_file"


async def test_malformed_tool_call_json_is_surfaced_not_raised(
    server: ReplayServer, make_backend: Any
) -> None:
    server.load({"steps": [{"reply": {"tool_calls": [
        {"id": "c1", "name": "read_file", "arguments": '{"path": "a.py"'}]}}]})
    chunks = await collect(make_backend().stream(hello()))
    call = next(c.tool_call for c in chunks if c.kind == "tool_call")
    assert call is not None and call.arguments == '{"path": "a.py"'
    from agentls.llm.messages import MalformedToolCall

    with pytest.raises(MalformedToolCall, match="not valid JSON"):
        call.parsed_arguments()


async def test_non_streaming_completion(server: ReplayServer, make_backend: Any) -> None:
    server.load({"steps": [{"reply": {"text": "whole answer", "tool_calls": [
        {"id": "c9", "name": "git_status", "arguments": {}}]}}]})
    response = await make_backend().complete(hello())
    assert response.text == "whole answer"
    assert [(c.id, c.name, c.parsed_arguments()) for c in response.tool_calls] == [
        ("c9", "git_status", {})]
    assert response.usage.total_tokens == (
        response.usage.prompt_tokens + response.usage.completion_tokens)
    assert server.requests[0].body.get("stream") in (None, False)


async def test_a_refusal_streamed_or_whole_is_the_text_with_finish_reason_refusal(
        server: ReplayServer, make_backend: Any) -> None:
    server.load({"steps": [{"times": 2, "reply": {"refusal": "I can't help with that.",
                                                  "chunk_size": 5}}]})
    chunks = await collect(make_backend().stream(hello()))
    assert "".join(c.text for c in chunks if c.kind == "text") == "I can't help with that."
    streamed = chunks[-1].response
    assert streamed is not None and streamed.finish_reason == "refusal"
    whole = await make_backend().complete(hello())
    assert whole.text == "I can't help with that." and whole.finish_reason == "refusal"


async def test_429_with_retry_after_then_success(
    server: ReplayServer, make_backend: Any, clock: Clock
) -> None:
    server.load({"steps": [
        {"error": {"status": 429, "headers": {"Retry-After": "2"}}},
        {"reply": {"text": "finally"}},
    ]})
    notices: list[RetryNotice] = []
    chunks = await collect(make_backend().stream(hello(), on_retry=notices.append))
    assert "".join(c.text for c in chunks) == "finally"
    assert clock.slept == [2.0]
    assert [(n.attempt, n.max_retries, n.delay, n.reason) for n in notices] == [
        (1, 3, 2.0, "rate_limit")]
    assert len(server.requests) == 2


async def test_503_three_times_then_failure(
    server: ReplayServer, make_backend: Any, clock: Clock
) -> None:
    server.load({"steps": [{"times": 4, "error": {"status": 503, "body": "overloaded"}}]})
    with pytest.raises(BackendError) as info:
        await collect(make_backend().stream(hello()))
    assert info.value.kind == "server_error" and info.value.status_code == 503
    assert "overloaded" in info.value.message
    assert len(server.requests) == 4
    assert clock.slept == [0.5, 1.0, 2.0]  # 1, 2, 4 s backoff with jitter pinned to half


async def test_context_length_body_is_context_too_long_and_not_retried(
    server: ReplayServer, make_backend: Any
) -> None:
    server.load({"steps": [{"error": {"status": 400, "body": {"error": {
        "message": "This model's maximum context length is 8192 tokens. However, your "
        "messages resulted in 9000 tokens.",
        "type": "invalid_request_error", "param": "messages",
        "code": "context_length_exceeded"}}}}]})
    with pytest.raises(BackendError) as info:
        await make_backend().complete(hello())
    assert info.value.kind == "context_too_long" and not info.value.retryable
    assert "maximum context length is 8192" in info.value.message
    assert len(server.requests) == 1


async def test_401_is_auth(server: ReplayServer, make_backend: Any) -> None:
    server.load({"api_key": "sk-right", "steps": [{"reply": {"text": "never"}}]})
    with pytest.raises(BackendError) as info:
        await collect(make_backend(api_key="sk-wrong").stream(hello()))
    assert info.value.kind == "auth" and info.value.status_code == 401
    assert len(server.requests) == 1
    assert "sk-wrong" not in str(info.value)


async def test_missing_key_says_which_variable(server: ReplayServer, make_backend: Any) -> None:
    server.load({"api_key": "sk-right", "steps": []})
    with pytest.raises(BackendError) as info:
        await make_backend(api_key=None).complete(hello())
    assert "OPENAI_API_KEY is not set" in info.value.message


async def test_unknown_model_is_model_not_found(server: ReplayServer, make_backend: Any) -> None:
    server.load({"models": ["scripted-model"], "steps": [{"reply": {"text": "x"}}]})
    with pytest.raises(BackendError) as info:
        await collect(make_backend(model="gpt-9").stream(hello()))
    assert info.value.kind == "model_not_found" and info.value.status_code == 404
    assert "gpt-9" in info.value.message


async def test_unreachable_url_is_connection_naming_the_url(
    make_backend: Any, clock: Clock
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(BackendError) as info:
        await collect(make_backend(base_url=url).stream(hello()))
    assert info.value.kind == "connection"
    assert url in info.value.message
    assert len(clock.slept) == 3  # connection failures are retried


async def test_stream_dropped_before_first_token_is_retried(
    server: ReplayServer, make_backend: Any, clock: Clock
) -> None:
    server.load({"steps": [
        {"drop_after": 0, "reply": {"text": "lost"}},
        {"reply": {"text": "second try"}},
    ]})
    chunks = await collect(make_backend().stream(hello()))
    assert "".join(c.text for c in chunks) == "second try"
    assert len(clock.slept) == 1


async def test_stream_dropped_mid_answer_keeps_partial_text(
    server: ReplayServer, make_backend: Any, clock: Clock
) -> None:
    server.load({"steps": [
        {"drop_after": 3, "reply": {"text": "abcdefghijklmnop", "chunk_size": 4}},
        {"reply": {"text": "must not be asked for"}},
    ]})
    seen: list[str] = []
    with pytest.raises(BackendError) as info:
        async for chunk in make_backend().stream(hello()):
            seen.append(chunk.text)
    assert info.value.kind == "connection" and "mid-answer" in info.value.message
    assert info.value.partial is not None
    assert info.value.partial.text == "".join(seen) and seen
    assert len(server.requests) == 1 and clock.slept == []


async def test_cache_hit_replays_as_a_stream_flagged_cached(
    server: ReplayServer, make_backend: Any, tmp_path: Path
) -> None:
    server.load({"steps": [{"times": 1, "reply": {"text": "cache me", "tool_calls": [
        {"id": "c1", "name": "read_file", "arguments": {"path": "a"}}]}}]})
    cache = ResponseCache(tmp_path)
    backend = make_backend(cache=cache)
    first = await collect(backend.stream(hello()))
    second = await collect(backend.stream(hello()))
    assert [c.kind for c in first] == [c.kind for c in second] == ["text", "tool_call", "done"]
    assert not any(c.cached for c in first) and all(c.cached for c in second)
    assert second[-1].response is not None and second[-1].response.text == "cache me"
    assert len(server.requests) == 1
    different = ChatRequest([Message.system("be brief"), Message.user("Hello")])
    with pytest.raises(BackendError):  # "Hello" is not "hello": a miss, and the script is spent
        await collect(backend.stream(different))
    cache.close()


async def test_cache_bypass_per_request(
    server: ReplayServer, make_backend: Any, tmp_path: Path
) -> None:
    server.load({"steps": [{"times": 2, "reply": {"text": "fresh"}}]})
    cache = ResponseCache(tmp_path)
    backend = make_backend(cache=cache)
    await collect(backend.stream(hello()))
    again = await collect(backend.stream(hello(), use_cache=False))
    assert not any(c.cached for c in again) and len(server.requests) == 2
    cache.close()


async def test_list_models(server: ReplayServer, make_backend: Any) -> None:
    server.load({"models": ["scripted-model", "other"], "steps": []})
    assert await make_backend().list_models() == ["scripted-model", "other"]


async def test_api_key_never_reaches_logs_or_cache(
    server: ReplayServer, make_backend: Any, tmp_path: Path,
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str],
) -> None:
    secret = "sk-planted-" + "7" * 32
    server.load({"api_key": secret, "steps": [
        {"error": {"status": 429, "headers": {"Retry-After": "0"}}},
        {"reply": {"text": "ok"}},
    ]})
    caplog.set_level(logging.DEBUG)
    cache_dir = tmp_path / "cache"
    cache = ResponseCache(cache_dir)
    backend = make_backend(cache=cache, api_key=secret)
    await collect(backend.stream(hello()))
    await collect(backend.stream(hello()))
    cache.close()
    wrong = make_backend(api_key=secret + "x")
    with pytest.raises(BackendError) as info:
        await wrong.complete(hello())
    out = capsys.readouterr()
    assert secret not in caplog.text and secret not in out.out + out.err
    assert secret not in str(info.value)
    for path in cache_dir.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    assert all(secret not in json.dumps(r.headers) for r in server.requests)


class _NotAModelServer(http.server.BaseHTTPRequestHandler):
    """Answers 200 with what a proxy or a broken server sends: an HTML page, or a stream
    whose second event is not JSON."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(200)
        if self.path.endswith("/html/chat/completions"):
            page = b"<html>502 from the proxy</html>"
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
            return
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b'data: {"id": "c", "object": "chat.completion.chunk", "created": 1, '
                         b'"model": "m", "choices": [{"index": 0, "delta": {"content": "hi"}}]}'
                         b'\n\ndata: {not json\n\n')

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def not_a_model_server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotAModelServer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


async def test_a_stream_event_that_is_not_json_is_a_backend_error(
    not_a_model_server: str, make_backend: Any, clock: Clock
) -> None:
    seen: list[str] = []
    with pytest.raises(BackendError) as info:
        async for chunk in make_backend(base_url=f"{not_a_model_server}/v1").stream(hello()):
            seen.append(chunk.text)
    assert info.value.kind == "server_error" and "not valid JSON" in info.value.message
    assert seen == ["hi"] and info.value.partial is not None and clock.slept == []


async def test_a_page_instead_of_a_completion_is_a_backend_error(
    not_a_model_server: str, make_backend: Any
) -> None:
    with pytest.raises(BackendError) as info:
        await make_backend(base_url=f"{not_a_model_server}/html").complete(hello())
    assert info.value.kind == "server_error"
    assert "502 from the proxy" in info.value.message
