"""`agentls ask` and `agentls cache` as a person runs them: subprocesses, scripted model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentls.devtools.replay import ReplayServer


def agentls(*args: str, env: dict[str, str], stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentls", *args], capture_output=True,
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
