"""`agentls ask` and `agentls cache` as a person runs them: subprocesses, scripted model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentls.devtools.replay.command import ReplayServer


def agentls(*args: str, env: dict[str, str], stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "agentls", *args], capture_output=True,
                          text=True, env=env, input=stdin, check=False, timeout=60)


@pytest.fixture
def env(server: ReplayServer, tmp_path: Path) -> dict[str, str]:
    """Environment selecting a backend that points at the scripted server."""
    return {
        **os.environ,
        "AGENTLS_BACKENDS__SCRIPTED__BASE_URL": server.base_url,
        "AGENTLS_BACKENDS__SCRIPTED__MODEL": "scripted-model",
        "AGENTLS_BACKENDS__SCRIPTED__API_KEY_ENV": "SCRIPTED_KEY",
        "AGENTLS_BACKEND": "scripted",
        "AGENTLS_RETRY__BASE_DELAY_S": "0.01",
        "SCRIPTED_KEY": "sk-cli-planted-secret-0123456789",
    }


def test_ask_streams_then_second_identical_ask_is_cached(
    server: ReplayServer, env: dict[str, str]
) -> None:
    server.load({"api_key": env["SCRIPTED_KEY"],
                 "steps": [{"times": 1, "reply": {"text": "forty-two"}}]})
    first = agentls("ask", "what is 6 x 7?", env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "forty-two"
    second = agentls("ask", "what is 6 x 7?", env=env)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "forty-two" and "(cached)" in second.stderr
    assert len(server.requests) == 1

    stats = json.loads(agentls("cache", "stats", "--json", env=env).stdout)
    assert stats["entries"] == 1 and stats["hits"] >= 1
    for output in (first.stdout, first.stderr, second.stdout, second.stderr):
        assert env["SCRIPTED_KEY"] not in output
    for path in Path(stats["directory"]).rglob("*"):
        if path.is_file():
            assert env["SCRIPTED_KEY"].encode() not in path.read_bytes()

    cleared = agentls("cache", "clear", env=env)
    assert cleared.returncode == 0 and "removed 1" in cleared.stdout
    assert json.loads(agentls("cache", "stats", "--json", env=env).stdout)["entries"] == 0


def test_no_cache_flag_always_asks_the_server(server: ReplayServer, env: dict[str, str]) -> None:
    server.load({"steps": [{"times": 2, "reply": {"text": "fresh"}}]})
    assert agentls("ask", "--no-cache", "q", env=env).returncode == 0
    assert agentls("ask", "--no-cache", "q", env=env).returncode == 0
    assert len(server.requests) == 2


def test_prompt_from_stdin(server: ReplayServer, env: dict[str, str]) -> None:
    server.load({"steps": [{"match": {"user": "from stdin"}, "reply": {"text": "got it"}}]})
    done = agentls("ask", "-", env=env, stdin="a prompt from stdin\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "got it"


def test_retry_is_reported_on_stderr(server: ReplayServer, env: dict[str, str]) -> None:
    server.load({"steps": [{"error": {"status": 429, "headers": {"Retry-After": "0"}}},
                           {"reply": {"text": "ok"}}]})
    done = agentls("ask", "--no-cache", "x", env=env)
    assert done.returncode == 0
    assert "retry 1/3 in 0.0 s: rate limit" in done.stderr


@pytest.mark.parametrize(
    ("step", "code", "fragment"),
    [
        ({"error": {"status": 401}}, 2, "auth"),
        ({"error": {"status": 400, "body": "bad things"}}, 1, "bad_request"),
    ],
)
def test_backend_errors_exit_codes(server: ReplayServer, env: dict[str, str],
                                   step: dict[str, object], code: int, fragment: str) -> None:
    server.load({"steps": [step]})
    done = agentls("ask", "--no-cache", "x", env=env)
    assert done.returncode == code
    assert fragment in done.stderr and "what to do:" in done.stderr
    assert "Traceback" not in done.stderr


def test_unreachable_backend_exit_2_names_url(env: dict[str, str]) -> None:
    env = {**env, "AGENTLS_BACKENDS__SCRIPTED__BASE_URL": "http://127.0.0.1:9/v1",
           "AGENTLS_RETRY__MAX_RETRIES": "0"}
    done = agentls("ask", "x", env=env)
    assert done.returncode == 2
    assert "http://127.0.0.1:9/v1" in done.stderr


def test_bad_usage_exit_64(env: dict[str, str]) -> None:
    assert agentls("ask", env=env).returncode == 64


def test_usage_errors_point_at_help(env: dict[str, str]) -> None:
    done = agentls("ask", "x", "--frob", env=env)
    assert done.returncode == 64 and "agentls COMMAND --help" in done.stderr


def test_empty_prompt_is_a_usage_error(server: ReplayServer, env: dict[str, str]) -> None:
    assert agentls("ask", "  ", env=env).returncode == 64
    piped = agentls("ask", "-", env=env, stdin="\n")
    assert piped.returncode == 64 and "empty" in piped.stderr
    assert server.requests == []


def test_unknown_backend_exit_2_says_how_to_add_it(env: dict[str, str]) -> None:
    done = agentls("ask", "--backend", "nope", "x", env=env)
    assert done.returncode == 2
    assert "agentls config set backends.nope.base_url URL" in done.stderr


def test_agent_cli_backend_is_refused_before_any_request(env: dict[str, str]) -> None:
    env = {**env, "AGENTLS_BACKENDS__MYCODEX__TYPE": "codex"}
    done = agentls("ask", "--backend", "mycodex", "x", env=env)
    assert done.returncode == 64 and "agentls run" in done.stderr
    assert "Traceback" not in done.stderr


def test_stream_cut_mid_answer_is_a_backend_error(server: ReplayServer,
                                                  env: dict[str, str]) -> None:
    server.load({"steps": [{"reply": {"text": "a long answer that is cut", "chunk_size": 4},
                            "drop_after": 3}]})
    done = agentls("ask", "--no-cache", "x", env=env)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("a long") and "cut off" in done.stderr


def test_a_damaged_cache_neither_breaks_ask_nor_survives_clear(
    server: ReplayServer, env: dict[str, str], isolated_user_dirs: Path
) -> None:
    directory = isolated_user_dirs / "cache" / "agentls" / "responses"
    directory.mkdir(parents=True)
    (directory / "cache.db").write_bytes(b"not a database " * 100)
    server.load({"steps": [{"reply": {"text": "still here"}}]})
    done = agentls("ask", "x", env=env)
    assert done.returncode == 0 and done.stdout.strip() == "still here"
    assert "agentls cache clear" in done.stderr and "Traceback" not in done.stderr

    stats = agentls("cache", "stats", env=env)
    assert stats.returncode == 73 and "agentls cache clear" in stats.stderr
    cleared = agentls("cache", "clear", env=env)
    assert cleared.returncode == 0, cleared.stderr
    assert agentls("cache", "stats", "--json", env=env).returncode == 0


def test_prompts_in_another_encoding_are_sent_not_crashed_on(server: ReplayServer,
                                                             env: dict[str, str]) -> None:
    server.load({"steps": [{"times": 2, "reply": {"text": "ok"}}]})
    piped = subprocess.run([sys.executable, "-P", "-m", "agentls", "ask", "--no-cache", "-"],
                           input=b"\xffcaf\xe9\n", capture_output=True, env=env, check=False,
                           timeout=60)
    assert piped.returncode == 0, piped.stderr
    argument = subprocess.run([sys.executable, "-P", "-m", "agentls", "ask", "--no-cache",
                               os.fsdecode(b"caf\xe9")], capture_output=True, env=env,
                              check=False, timeout=60)
    assert argument.returncode == 0, argument.stderr
    assert [r.body["messages"][-1]["content"] for r in server.requests] == ["\ufffdcaf\ufffd\n",
                                                                            "caf\ufffd"]
