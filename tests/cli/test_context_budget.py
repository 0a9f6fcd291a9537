"""A prompt over the model's context is refused before sending: `context_too_long` with the
estimated tokens and the context, never a backend 400."""

from __future__ import annotations

from pathlib import Path

from tests.cli.headless_helpers import agentls, last_json, make_project, scripted_env

from agentls.devtools.replay.command import ReplayServer


def test_a_5_mb_prompt_fails_with_the_numbers_and_nothing_is_sent(
        server: ReplayServer, tmp_path: Path) -> None:
    server.load({"steps": [{"times": "*", "reply": {"text": "read it all"}}]})
    project = make_project(tmp_path / "project")
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Explain this log:\n" + "line of a very long log 0123456789\n" * 150_000)
    assert prompt.stat().st_size > 5_000_000
    env = {**scripted_env(server), "AGENTLS_BACKENDS__SCRIPTED__CONTEXT_MAX_TOKENS": "32000"}
    done = agentls("run", str(prompt), "--cwd", str(project), "--json", env=env)
    result = last_json(done.stdout)
    assert done.returncode != 0 and result["error"]["kind"] == "context_too_long", done.stdout
    message = result["error"]["message"]
    assert "tokens (estimated)" in message and "32,000" in message, message
    assert not [r for r in server.requests if r.path.endswith("/chat/completions")]
