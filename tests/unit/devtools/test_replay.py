"""The scripted model server, driven by the real `openai` client over real HTTP."""

from __future__ import annotations

import http.client
import itertools
import json
import logging
import math
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from agentls.devtools.replay import command as replay
from agentls.devtools.replay.command import ReplayServer, ScriptError, load_script

MODEL = "scripted-model"
DEMO_SCRIPT = Path(replay.__file__).parent.parent / "scripts" / "demo.yaml"


def user(text: str) -> list[ChatCompletionMessageParam]:
    return [{"role": "system", "content": "You are terse."}, {"role": "user", "content": text}]


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ReplayServer] = []

    def start(script: dict[str, Any] | str | Path) -> ReplayServer:
        servers.append(ReplayServer(script).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def client_for(server: ReplayServer, api_key: str = "test") -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=api_key, max_retries=0)


def post_raw(server: ReplayServer, path: str, body: dict[str, Any]) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", server.port)
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    return connection.getresponse()


TWO_CALLS = {
    "tool_calls": [
        {"id": "call_a", "name": "read_file", "arguments": {"path": "src/app.py", "limit": 200}},
        {"name": "grep", "arguments": {"pattern": "def main", "glob": "**/*.py"}},
    ],
    "chunk_size": 5,
}


# ----------------------------------------------------------------------------- chat streaming


def test_streamed_text_reassembles_to_the_scripted_text(serve: Any) -> None:
    text = "Hello, I am a scripted model; this text arrives in pieces."
    server = serve({"steps": [{"reply": {"text": text, "chunk_size": 7}}]})
    stream = client_for(server).chat.completions.create(
        model=MODEL, messages=user("hi"), stream=True
    )
    chunks = list(stream)

    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == text
    assert len([c for c in chunks if c.choices[0].delta.content]) == math.ceil(len(text) / 7)
    assert [c.choices[0].finish_reason for c in chunks][-1] == "stop"
    assert {c.id for c in chunks} == {chunks[0].id}
    assert all(c.object == "chat.completion.chunk" and c.model == MODEL for c in chunks)


@pytest.mark.parametrize("interleave", [False, True])
async def test_parallel_tool_calls_split_across_chunks_reassemble(
    serve: Any, interleave: bool
) -> None:
    server = serve({"steps": [{"reply": {**TWO_CALLS, "interleave_tool_calls": interleave}}]})
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    calls: dict[int, dict[str, str]] = {}
    order: list[int] = []
    finish = None
    async with client:
        stream = await client.chat.completions.create(
            model=MODEL, messages=user("look around"), stream=True
        )
        async for chunk in stream:
            choice = chunk.choices[0]
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                order.append(delta.index)
                call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                if delta.id:
                    assert call["id"] == "", "only the first delta of a call carries its id"
                    call["id"] = delta.id
                    assert delta.type == "function"
                if delta.function and delta.function.name:
                    call["name"] = delta.function.name
                if delta.function and delta.function.arguments:
                    call["arguments"] += delta.function.arguments

    assert finish == "tool_calls"
    assert calls[0]["id"] == "call_a" and calls[1]["id"]  # scripted id, generated id
    assert [calls[i]["name"] for i in (0, 1)] == ["read_file", "grep"]
    assert json.loads(calls[0]["arguments"]) == {"path": "src/app.py", "limit": 200}
    assert json.loads(calls[1]["arguments"]) == {"pattern": "def main", "glob": "**/*.py"}
    assert order.count(0) > 3 and order.count(1) > 3  # arguments really were split
    switches = sum(1 for a, b in itertools.pairwise(order) if a != b)
    assert (switches > 1) is interleave


def test_include_usage_sends_a_final_usage_chunk_with_no_choices(serve: Any) -> None:
    server = serve({"steps": [{"reply": {"text": "Two words"}, "times": 2}]})
    client = client_for(server)
    messages = user("count me")
    with_usage = list(client.chat.completions.create(
        model=MODEL, messages=messages, stream=True, stream_options={"include_usage": True}
    ))
    without = list(client.chat.completions.create(model=MODEL, messages=messages, stream=True))

    last = with_usage[-1]
    assert last.choices == [] and last.usage is not None
    # 2 messages x 4 + "You are terse." (4 tokens) + "count me" (2 tokens); reply "Two words"
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (14, 2)
    assert last.usage.total_tokens == 16
    assert all(c.usage is None for c in with_usage[:-1])
    assert all(c.usage is None and c.choices for c in without)


def test_prompt_tokens_follow_the_documented_rule() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "fix main.py"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "main.py"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "print('hi')"},
    ]
    tools = [{"type": "function", "function": {"name": "read_file"}}]
    # fix main . py = 4; read_file = 1, { " path " : " main . py " } = 11; print ( ' hi ' ) = 6
    assert replay.count_prompt_tokens(messages) == 3 * 4 + 4 + 1 + 11 + 6
    tools_tokens = replay.count_tokens(json.dumps(tools))
    assert replay.count_prompt_tokens(messages, tools) == 34 + tools_tokens
    assert replay.count_completion_tokens("Done.", [("grep", "{}")]) == 2 + 1 + 2


def test_a_step_may_override_usage_and_finish_reason(serve: Any) -> None:
    usage = {"prompt_tokens": 1000, "prompt_tokens_details": {"cached_tokens": 900}}
    server = serve({"steps": [
        {"reply": {"text": "cut sho", "finish_reason": "length", "usage": usage}}
    ]})
    stream = client_for(server).chat.completions.create(
        model=MODEL, messages=user("long"), stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)

    assert chunks[-2].choices[0].finish_reason == "length"
    final = chunks[-1].usage
    assert final is not None and final.prompt_tokens == 1000
    assert final.completion_tokens == 2 and final.total_tokens == 1002  # "cut", "sho"
    assert final.prompt_tokens_details is not None
    assert final.prompt_tokens_details.cached_tokens == 900


def test_malformed_arguments_are_sent_verbatim(serve: Any) -> None:
    broken = '{"path": "a.py", '
    server = serve({"steps": [{"reply": {"tool_calls": [{"name": "read_file",
                                                         "arguments": broken}]}}]})
    stream = client_for(server).chat.completions.create(
        model=MODEL, messages=user("x"), stream=True
    )
    pieces = [d.function.arguments for c in stream for d in c.choices[0].delta.tool_calls or []
              if d.function and d.function.arguments]

    assert "".join(pieces) == broken


def test_the_stream_is_chunked_sse_ending_with_done(serve: Any) -> None:
    server = serve({"steps": [{"reply": {"text": "hi"}}]})
    response = post_raw(server, "/v1/chat/completions",
                        {"model": MODEL, "messages": user("x"), "stream": True})
    body = response.read().decode()

    assert response.getheader("Transfer-Encoding") == "chunked"
    assert response.getheader("Content-Type", "").startswith("text/event-stream")
    events = [e for e in body.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"


# ----------------------------------------------------------------------------- non-streaming


def test_non_streaming_answers_one_completion_with_usage(serve: Any) -> None:
    server = serve({"steps": [
        {"match": {"stream": False, "tool_results": False}, "reply": {"text": "Plain."}},
        {"match": {"stream": False}, "reply": TWO_CALLS},
    ]})
    client = client_for(server)
    plain = client.chat.completions.create(model=MODEL, messages=user("x"))
    tool_turn: list[ChatCompletionMessageParam] = [
        *user("x"),
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c9", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c9", "content": "a.py"},
    ]
    calls = client.chat.completions.create(model=MODEL, messages=tool_turn)

    assert plain.object == "chat.completion"
    assert plain.choices[0].message.content == "Plain."
    assert plain.choices[0].finish_reason == "stop"
    assert plain.usage is not None and plain.usage.completion_tokens == 2
    message = calls.choices[0].message
    assert message.content is None and calls.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls is not None
    assert [c.function.name for c in message.tool_calls if c.type == "function"] == [
        "read_file", "grep"]
    assert message.tool_calls[0].id == "call_a"


def test_keep_alive_reuses_one_connection(serve: Any) -> None:
    server = serve({"steps": [{"reply": {"text": "ok"}, "times": "*"}]})
    client = client_for(server)
    for _ in range(3):
        client.chat.completions.create(model=MODEL, messages=user("x"))

    assert len({r.connection for r in server.requests}) == 1


# ----------------------------------------------------------------------------- errors


def test_429_with_retry_after_then_success(serve: Any) -> None:
    server = serve({"steps": [
        {"match": {"user": "busy"}, "error": {"status": 429, "headers": {"Retry-After": 1}}},
        {"match": {"user": "busy"}, "reply": {"text": "now it works"}},
    ]})
    client = client_for(server)
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model=MODEL, messages=user("busy?"))
    retried = client.chat.completions.create(model=MODEL, messages=user("busy?"))

    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "1"
    assert caught.value.code == "rate_limit_exceeded"  # OpenAI's default body for a 429
    assert retried.choices[0].message.content == "now it works"
    assert server.remaining_steps() == []


def test_scripted_error_bodies_are_sent_as_given(serve: Any) -> None:
    llama_cpp = '{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}'  # noqa: E501
    server = serve({"steps": [
        {"error": {"status": 400, "body": llama_cpp}},
        {"error": {"status": 503, "body": "upstream overloaded"}},
    ]})
    client = client_for(server)
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model=MODEL, messages=user("x"))
    with pytest.raises(openai.InternalServerError) as unavailable:
        client.chat.completions.create(model=MODEL, messages=user("x"))

    assert "exceeds the available context size" in bad.value.message
    assert bad.value.response.headers["content-type"] == "application/json"
    assert unavailable.value.status_code == 503
    assert unavailable.value.response.text == "upstream overloaded"


def test_a_dropped_stream_is_a_protocol_error_after_the_first_chunks(serve: Any) -> None:
    server = serve({"steps": [{"reply": {"text": "abcdefghij", "chunk_size": 2},
                               "drop_after": 3}]})
    received: list[str] = []
    stream = client_for(server).chat.completions.create(
        model=MODEL, messages=user("x"), stream=True
    )
    with pytest.raises(openai.APIConnectionError) as caught:
        for chunk in stream:
            received.append(chunk.choices[0].delta.content or "")

    assert received == ["", "ab", "cd"]  # role chunk + two pieces
    assert isinstance(caught.value.__cause__, httpx2.RemoteProtocolError)
    assert "incomplete chunked read" in str(caught.value.__cause__)


async def test_a_stream_dropped_before_any_chunk_fails_the_async_client(serve: Any) -> None:
    server = serve({"steps": [{"reply": {"text": "never"}, "drop_after": 0}]})
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    async with client:
        stream = await client.chat.completions.create(
            model=MODEL, messages=user("x"), stream=True
        )
        with pytest.raises(openai.APIConnectionError) as caught:
            async for _ in stream:
                pass

    assert isinstance(caught.value.__cause__, httpx2.RemoteProtocolError)


def test_a_dropped_non_streaming_reply_is_a_protocol_error(serve: Any) -> None:
    server = serve({"steps": [{"reply": {"text": "half of me"}, "drop_after": 1}]})
    with pytest.raises(openai.APIConnectionError) as caught:
        client_for(server).chat.completions.create(model=MODEL, messages=user("x"))

    assert isinstance(caught.value.__cause__, httpx2.RemoteProtocolError)


def test_a_raw_client_sees_an_incomplete_chunked_body(serve: Any) -> None:
    server = serve({"steps": [{"reply": {"text": "abcdef"}, "drop_after": 2}]})
    response = post_raw(server, "/v1/chat/completions",
                        {"model": MODEL, "messages": user("x"), "stream": True})

    with pytest.raises(http.client.IncompleteRead):
        response.read()


def test_an_unknown_model_is_not_found(serve: Any) -> None:
    server = serve({"steps": [{"reply": {"text": "x"}}]})
    with pytest.raises(openai.NotFoundError) as caught:
        client_for(server).chat.completions.create(model="gpt-9", messages=user("x"))

    assert caught.value.code == "model_not_found"
    assert caught.value.message == (
        "Error code: 404 - The model `gpt-9` does not exist or you do not have access to it."
    )
    assert server.remaining_steps()  # the step was not used up


def test_a_star_in_models_accepts_any_model(serve: Any) -> None:
    server = serve({"models": ["local", "*"], "steps": [{"reply": {"text": "any"}}]})
    reply = client_for(server).chat.completions.create(model="gpt-9", messages=user("x"))

    assert reply.model == "gpt-9"
    assert [m.id for m in client_for(server).models.list()] == ["local"]


def test_a_wrong_key_is_refused_and_never_echoed_or_logged(
    serve: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="agentls.devtools.replay.command")
    server_key, client_key = "sk-planted-server-secret", "sk-planted-client-secret"
    server = serve({"api_key": server_key, "steps": [{"reply": {"text": "in"}}]})
    with pytest.raises(openai.AuthenticationError) as caught:
        client_for(server, client_key).chat.completions.create(model=MODEL, messages=user("x"))
    allowed = client_for(server, server_key).chat.completions.create(
        model=MODEL, messages=user("x")
    )

    assert caught.value.code == "invalid_api_key"
    assert allowed.choices[0].message.content == "in"
    seen = caplog.text + repr(server.script) + repr(server.requests) + caught.value.response.text
    assert server_key not in seen and client_key not in seen
    assert {r.headers["authorization"] for r in server.requests} == {"<redacted>"}


def test_no_matching_step_is_a_500_naming_the_last_user_message(serve: Any) -> None:
    server = serve({"steps": [{"match": {"user": "/^deploy/"}, "reply": {"text": "x"}}]})
    with pytest.raises(openai.InternalServerError) as caught:
        client_for(server).chat.completions.create(model=MODEL, messages=user("refactor it"))

    assert caught.value.status_code == 500
    assert caught.value.code == "no_matching_step"
    assert "no script step matches this request" in caught.value.message
    assert "refactor it" in caught.value.message


def test_an_unknown_path_is_a_404_in_openai_error_shape(serve: Any) -> None:
    server = serve({"steps": []})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(f"{server.base_url}/completions/legacy")

    assert caught.value.code == 404
    error = json.loads(caught.value.read())["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"] == "Invalid URL (GET /v1/completions/legacy)"


# ----------------------------------------------------------------------------- matching


def test_steps_match_on_tool_results_and_the_tool_that_produced_them(serve: Any) -> None:
    server = serve({"steps": [
        {"name": "first", "match": {"user": "fix", "tool_results": False},
         "reply": {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {}}]}},
        {"name": "after grep", "match": {"tool": "grep"}, "reply": {"text": "wrong"}},
        {"name": "after read", "match": {"tool": "read_file"}, "reply": {"text": "fixed"}},
    ]})
    client = client_for(server)
    first = client.chat.completions.create(model=MODEL, messages=user("fix the bug"))
    history: list[Any] = [*user("fix the bug"), first.choices[0].message.model_dump(),
                          {"role": "tool", "tool_call_id": "r1", "content": "code"}]
    second = client.chat.completions.create(model=MODEL, messages=history)

    assert second.choices[0].message.content == "fixed"
    assert [r.step for r in server.requests] == [0, 2]
    assert [(s.index, s.name, s.uses_left) for s in server.remaining_steps()] == [
        (1, "after grep", 1)
    ]


def test_times_and_load_reset_the_step_counters(serve: Any) -> None:
    script = {"steps": [{"reply": {"text": "twice"}, "times": 2},
                        {"reply": {"text": "forever"}, "times": "*"}]}
    server = serve(script)
    client = client_for(server)

    def ask() -> str | None:
        return client.chat.completions.create(model=MODEL, messages=user("x")).choices[0] \
            .message.content

    assert [ask() for _ in range(4)] == ["twice", "twice", "forever", "forever"]
    assert server.remaining_steps() == []
    server.load(script)
    assert ask() == "twice"
    assert len(server.requests) == 5


def test_requests_are_recorded_with_the_parsed_body(serve: Any) -> None:
    server = serve({"steps": [{"reply": {"text": "x"}}]})
    client_for(server).chat.completions.create(
        model=MODEL, messages=user("what is here?"), temperature=0
    )
    [request] = server.requests

    assert (request.method, request.path, request.status, request.step) == (
        "POST", "/v1/chat/completions", 200, 0)
    assert request.body["temperature"] == 0
    assert request.last_user_message == "what is here?"
    assert request.headers["authorization"] == "<redacted>"
    assert request.headers["content-type"] == "application/json"


def test_a_slow_stream_does_not_block_other_requests(serve: Any) -> None:
    server = serve({"steps": [
        {"match": {"user": "slow"}, "reply": {"text": "late", "first_delay_s": 600}},
        {"match": {"user": "fast"}, "reply": {"text": "quick"}},
    ]})
    slow_client, fast_client = client_for(server), client_for(server)
    slow = slow_client.chat.completions.create(model=MODEL, messages=user("slow"), stream=True)
    first_slow_chunk = threading.Event()
    errors: list[BaseException] = []

    def read_slow() -> None:
        try:
            next(iter(slow))
            first_slow_chunk.set()
        except openai.APIConnectionError as exc:
            errors.append(exc)

    reader = threading.Thread(target=read_slow)
    reader.start()
    fast = fast_client.chat.completions.create(model=MODEL, messages=user("fast"))

    assert fast.choices[0].message.content == "quick"
    assert not first_slow_chunk.is_set()
    server.stop()  # interrupts the scripted delay: the slow stream is cut
    reader.join()
    assert errors and not first_slow_chunk.is_set()


# ----------------------------------------------------------------------------- models, embeddings


def test_models_are_listed_and_retrieved(serve: Any) -> None:
    server = serve({"models": ["scripted-model", "tiny"], "steps": []})
    client = client_for(server)
    listed = client.models.list()

    assert [(m.id, m.object, m.owned_by) for m in listed] == [
        ("scripted-model", "model", "scripted"), ("tiny", "model", "scripted")]
    assert client.models.retrieve("tiny").id == "tiny"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-9")


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_embeddings_are_deterministic_normalised_and_similar_for_similar_text(
    serve: Any,
) -> None:
    server = serve({"steps": []})
    client = client_for(server)
    texts = ["parse the config file", "parse the config files now", "bake a chocolate cake"]
    first = client.embeddings.create(model=MODEL, input=texts)  # base64 on the wire
    again = client.embeddings.create(model=MODEL, input=texts, encoding_format="float")
    single = client.embeddings.create(model=MODEL, input="short", dimensions=64)
    vectors = [d.embedding for d in first.data]

    assert [len(v) for v in vectors] == [384, 384, 384]
    assert [d.index for d in first.data] == [0, 1, 2]
    assert all(abs(math.sqrt(cosine(v, v)) - 1) < 1e-5 for v in vectors)
    for as_float, as_base64 in zip(again.data, vectors, strict=True):
        assert as_float.embedding == pytest.approx(as_base64, abs=1e-6)
    assert cosine(vectors[0], vectors[1]) > 0.5 > cosine(vectors[0], vectors[2])
    assert len(single.data[0].embedding) == 64
    assert first.usage.prompt_tokens == sum(replay.count_tokens(t) for t in texts)
    assert replay.embed_text("Parse THE config") == replay.embed_text("parse the config")


# ----------------------------------------------------------------------------- scripts


def test_a_yaml_script_loads_with_defaults_applied(tmp_path: Path) -> None:
    path = tmp_path / "script.yaml"
    path.write_text(
        "models: [m1]\n"
        "defaults: {chunk_size: 3, delay_s: 0.5}\n"
        "steps:\n"
        "  - match: {user: /^hi$/}\n"
        "    times: '*'\n"
        "    reply: {text: hello, chunk_size: 2}\n"
        "  - error: {status: 503}\n"
    )
    script = load_script(path)

    assert script.models == ("m1",) and script.source == str(path)
    reply = script.steps[0].reply
    assert reply is not None and (reply.chunk_size, reply.delay_s) == (2, 0.5)
    assert script.steps[0].times is None
    pattern = script.steps[0].match.user
    assert pattern is not None and pattern.matches("hi") and not pattern.matches("hi!")
    assert script.steps[1].error is not None and script.steps[1].error.status == 503


def test_a_json_script_loads(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": [{"reply": {"text": "j"}}]}))

    assert load_script(path).steps[0].reply == replay.Reply(text="j")


@pytest.mark.parametrize(("step", "expected"), [
    ({"reply": {"text": "x"}, "drop_afer": 2},
     "steps[1] (second): unknown key 'drop_afer' (did you mean 'drop_after'?)"),
    ({"reply": {"tool_calls": [{"arguments": {}}]}},
     "steps[1] (second).reply.tool_calls[0]: 'name' is required"),
    ({"reply": {"text": "x"}, "error": {"status": 429}},
     "steps[1] (second): needs exactly one of 'reply' or 'error'"),
    ({"match": {"user": "/[unclosed/"}, "reply": {}},
     "steps[1] (second).match.user: invalid regular expression"),
    ({"reply": {"chunk_size": 0}},
     "steps[1] (second).reply.chunk_size: expected an integer >= 1, got int 0"),
    ({"error": {"status": 200}},
     "steps[1] (second).error.status: expected an integer >= 400"),
])
def test_validation_errors_name_the_file_the_step_and_the_problem(
    tmp_path: Path, step: dict[str, Any], expected: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps({"steps": [{"reply": {"text": "ok"}}, {"name": "second", **step}]}))

    with pytest.raises(ScriptError) as caught:
        load_script(path)

    assert str(caught.value).startswith(f"{path}: {expected}")


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("steps:\n  - reply: {text: 'unterminated}\n")

    with pytest.raises(ScriptError, match=re.escape(f"{path}: invalid YAML at line")):
        load_script(path)


def test_the_shipped_demo_script_plays_its_scenes(serve: Any) -> None:
    server = serve(DEMO_SCRIPT)
    client = client_for(server)
    greeting = "".join(
        c.choices[0].delta.content or ""
        for c in client.chat.completions.create(model=MODEL, messages=user("Hello"), stream=True)
    )
    with pytest.raises(openai.RateLimitError) as limited:
        client.chat.completions.create(model=MODEL, messages=user("show a rate limit"))
    after = client.chat.completions.create(model=MODEL, messages=user("show a rate limit"))
    cached = client.chat.completions.create(model=MODEL, messages=user("cache me"))
    with pytest.raises(openai.InternalServerError):  # the cache step answers only once
        client.chat.completions.create(model=MODEL, messages=user("cache me"))

    assert "scripted model" in greeting
    assert limited.value.response.headers["retry-after"] == "1"
    assert after.choices[0].message.content and cached.choices[0].message.content


# ----------------------------------------------------------------------------- command line


def test_main_reports_a_bad_script_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("steps:\n  - reply: {text: hi}\n    tims: 2\n")

    assert replay.main(["--script", str(path)]) == 2
    assert "steps[0]: unknown key 'tims' (did you mean 'times'?)" in capsys.readouterr().err


def test_python_dash_m_serves_until_interrupted() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "agentls.devtools.replay.command", "--script", str(DEMO_SCRIPT),
         "--port", "0"],
        stderr=subprocess.PIPE, text=True,
        # a suite started in the background by a shell inherits SIGINT ignored, and so would
        # the server: Ctrl-C is what this test sends, so the child gets it back
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+/v1)$", line.strip())
        assert line.startswith("scripted model server (not a real model)") and found
        client = openai.OpenAI(base_url=found.group(1), api_key="test", max_retries=0)
        assert [m.id for m in client.models.list()] == [MODEL]
    finally:
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=30)

    assert process.returncode == 0
    assert rest == ""  # no per-request logging on stderr
