"""Cache honesty: agent runs ask the model unless configured, and a cached answer says so."""

from __future__ import annotations

from pathlib import Path

from tests.cli.headless_helpers import agentls, last_json, scripted_env

from agentls.devtools.replay.command import ReplayServer

STEPS = [{"reply": {"text": "answered by the scripted model"}}]


def cached_env(server: ReplayServer, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = scripted_env(server)
    env["AGENTLS_CACHE__ENABLED"] = "true"
    env["XDG_CACHE_HOME"] = str(tmp_path / "user-cache")
    env.update(extra)
    return env


def test_a_repeated_run_asks_the_model_again_by_default(
        server: ReplayServer, project: Path, tmp_path: Path) -> None:
    env = cached_env(server, tmp_path)
    server.load({"steps": STEPS})
    first = agentls("run", "say hello twice", "--cwd", str(project), "--json", env=env)
    server.load({"steps": STEPS})
    second = agentls("run", "say hello twice", "--cwd", str(project), "--json", env=env)
    assert first.returncode == second.returncode == 0, second.stderr
    assert len(server.requests) == 2
    assert last_json(second.stdout)["cached"] is False


def test_with_agent_runs_cached_the_answer_says_it_came_from_the_cache(
        server: ReplayServer, project: Path, tmp_path: Path) -> None:
    env = cached_env(server, tmp_path, AGENTLS_CACHE__AGENT_RUNS="true")
    server.load({"steps": STEPS})
    # Same session history both times: --session is not given, each run is a new session.
    first = agentls("run", "say hello once", "--cwd", str(project), env=env)
    assert first.returncode == 0, first.stderr
    assert "response cache" not in first.stderr
    second = agentls("run", "say hello once", "--cwd", str(project), env=env)
    assert second.returncode == 0, second.stderr
    assert len(server.requests) == 1
    assert second.stdout == "answered by the scripted model\n"
    assert "1 of 1 answers came from the response cache, not the model" in second.stderr
    as_json = agentls("run", "say hello once", "--cwd", str(project), "--json", env=env)
    result = last_json(as_json.stdout)
    assert result["cached"] is True and result["iterations"][0]["cachedTurns"] == 1


def test_verbose_names_the_instruction_files(
        server: ReplayServer, env: dict[str, str], project: Path) -> None:
    (project / "AGENTS.md").write_text("Be brief.\n")
    (project / "src" / "AGENTS.md").write_text("Tabs in src.\n")
    server.load({"steps": STEPS})
    done = agentls("run", "hello there", "--cwd", str(project), "-v", env=env)
    assert done.returncode == 0, done.stderr
    assert "instructions: AGENTS.md, src/AGENTS.md" in done.stderr
    server.load({"steps": STEPS})
    quiet = agentls("run", "hello there", "--cwd", str(project), env=env)
    assert "instructions:" not in quiet.stderr
