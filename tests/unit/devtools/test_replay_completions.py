"""The scripted model server's /v1/completions (fill in the middle), through the real
openai client."""

from __future__ import annotations

import threading
import time

import openai

from agentls.devtools.replay.command import ReplayServer


def client(server: ReplayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)


def test_completion_with_suffix_stop_and_max_tokens() -> None:
    script = {"steps": [{"match": {"prompt": "/def f\\($/", "suffix": "return"},
                         "times": "*", "reply": {"text": "x, y):\n    z = 1\n<|endoftext|>"}}]}
    with ReplayServer(script) as server:
        answer = client(server).completions.create(model="scripted-model", prompt="def f(",
                                                   suffix="\n    return z", stop=["<|endo"])
        assert answer.choices[0].text == "x, y):\n    z = 1\n"
        assert answer.id.startswith("cmpl-scripted")
        short = client(server).completions.create(model="scripted-model", prompt="def f(",
                                                  suffix="return", max_tokens=3)
        assert (short.choices[0].text, short.choices[0].finish_reason) == ("x, y", "length")


def test_streamed_completion() -> None:
    with ReplayServer({"steps": [{"reply": {"text": "abcdefgh", "chunk_size": 3}}]}) as server:
        pieces = [c.choices[0].text for c in client(server).completions.create(
            model="scripted-model", prompt="p", suffix="s", stream=True)]
        assert "".join(pieces) == "abcdefgh" and pieces[:3] == ["abc", "def", "gh"]
        assert server.closed_streams == []


def test_suffix_refused_like_vllm() -> None:
    with ReplayServer({"completions_suffix": False, "steps": [{"reply": {"text": "x"}}]}) as srv:
        try:
            client(srv).completions.create(model="scripted-model", prompt="p", suffix="s")
        except openai.BadRequestError as exc:
            assert "suffix is not currently supported" in str(exc)
        else:
            raise AssertionError("suffix was accepted")
        assert client(srv).completions.create(model="scripted-model", prompt="p").choices[
            0].text == "x"


def test_chat_only_steps_do_not_answer_completions() -> None:
    with ReplayServer({"steps": [{"match": {"user": "hi"}, "reply": {"text": "chat"}}]}) as srv:
        try:
            client(srv).completions.create(model="scripted-model", prompt="hi")
        except openai.InternalServerError as exc:
            assert "no script step matches this completion request" in str(exc)
        else:
            raise AssertionError("a chat step answered a completion")


def test_a_closed_stream_is_recorded_when_it_closes() -> None:
    script = {"steps": [{"reply": {"text": "x" * 100, "chunk_size": 1, "delay_s": 0.05}}]}
    with ReplayServer(script) as server:
        stream = client(server).completions.create(model="scripted-model", prompt="p",
                                                   stream=True)
        iterator = iter(stream)
        next(iterator)
        assert server.in_flight() == 1
        closed_at = time.time()
        stream.close()
        deadline = time.time() + 2
        while not server.closed_streams and time.time() < deadline:
            threading.Event().wait(0.005)
        (closed,) = server.closed_streams
        assert closed.path == "/v1/completions" and closed.events_sent < closed.events_total
        assert closed.time - closed_at < 0.2
        assert server.most_in_flight() == 1


def test_next_edit_rewrite_answers_in_zetas_format() -> None:
    prompt = ("### User Excerpt:\n\n```f.py\nimport os\n<|editable_region_start|>\n"
              "def f(total<|user_cursor_is_here|>):\n    return count\n"
              "<|editable_region_end|>\nprint(f(1))\n```\n\n### Response:\n")
    script = {"steps": [{"times": "*", "reply": {"rewrite": [["count", "total"]]}}]}
    with ReplayServer(script) as server:
        answer = client(server).completions.create(model="scripted-model", prompt=prompt)
        assert answer.choices[0].text == (
            "```f.py\nimport os\n<|editable_region_start|>\ndef f(total):\n    return total\n"
            "<|editable_region_end|>\nprint(f(1))\n```")
        chat = client(server).chat.completions.create(
            model="scripted-model", messages=[{"role": "user", "content": prompt}])
        assert chat.choices[0].message.content == answer.choices[0].text


def test_a_rewrite_must_be_pairs() -> None:
    import pytest

    from agentls.devtools.replay.script import ScriptError, load_script

    with pytest.raises(ScriptError, match="rewrite"):
        load_script({"steps": [{"reply": {"rewrite": ["count"]}}]})
