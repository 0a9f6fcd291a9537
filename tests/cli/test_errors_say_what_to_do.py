"""Errors a newcomer meets in the first hour name the cause and the fix."""

from __future__ import annotations

from pathlib import Path

from tests.cli.headless_helpers import agentls, scripted_env

from agentls.devtools.replay.command import ReplayServer
from agentls.llm.backend import missing_v1_hint
from agentls.settings import config


def test_ask_with_an_unknown_model_names_that_model(server: ReplayServer,
                                                    tmp_path: Path) -> None:
    server.load({"models": ["scripted-model"], "steps": [{"reply": {"text": "hi"}}]})
    done = agentls("-C", str(tmp_path), "ask", "hello", "--model", "no-such-model",
                   env=scripted_env(server))
    assert done.returncode == 2
    assert "'no-such-model'" in done.stderr
    assert "'scripted-model'" not in done.stderr


def test_base_url_without_v1_suggests_it(server: ReplayServer, tmp_path: Path) -> None:
    server.load({"steps": [{"reply": {"text": "hi"}}]})
    env = scripted_env(server)
    root = server.base_url.removesuffix("/v1")
    env["AGENTLS_BACKENDS__SCRIPTED__BASE_URL"] = root
    done = agentls("-C", str(tmp_path), "ask", "hello", env=env)
    assert done.returncode == 2
    assert f"did you mean {root}/v1?" in done.stderr
    assert f"agentls config set backends.scripted.base_url {root}/v1" in done.stderr


def test_missing_v1_hint_only_for_a_route_404() -> None:
    body = '{"error": {"message": "Invalid URL (POST /chat/completions)"}}'
    assert missing_v1_hint("http://h:1", 404, body, "b") is not None
    assert missing_v1_hint("http://h:1/v1", 404, body, "b") is None
    assert missing_v1_hint("http://h:1", 404, "The model `x` does not exist", "b") is None
    assert missing_v1_hint("http://h:1", 400, body, "b") is None


def test_unknown_config_key_suggests_the_nearest(tmp_path: Path) -> None:
    done = agentls("-C", str(tmp_path), "config", "set", "cache.ttl", "60",
                   env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
                        "PATH": "/usr/bin:/bin"})
    assert done.returncode != 0
    assert "did you mean cache.ttl_s?" in done.stderr.lower()


def test_nearest_key_keeps_the_persons_backend_name() -> None:
    assert config.nearest_key("backends.work.modle") == "backends.work.model"
    assert config.nearest_key("max_iteration") == "max_iterations"
    assert config.nearest_key("zz-unrelated-qq") is None


def test_config_set_refuses_a_base_url_without_scheme(tmp_path: Path) -> None:
    done = agentls("-C", str(tmp_path), "config", "set", "backends.work.base_url",
                   "localhost:8000/v1",
                   env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
                        "PATH": "/usr/bin:/bin"})
    assert done.returncode == 78, done.stderr
    assert "http:// or https://" in done.stderr
    assert "agentls config set backends.work.base_url http://localhost:8000/v1" in done.stderr
    assert not (tmp_path / "cfg" / "agentls" / "config.toml").exists()
