"""Agent CLIs as backends, against stand-in executables that print what the real tools print."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.unit.llm import standin_agent_cli as standins

from agentls.llm.agent_cli.backends import (
    ClaudeCli,
    CodexCli,
    CopilotCli,
    ExternalResult,
    adapter_for,
    child_environment,
    installed_unsupported,
)
from agentls.llm.agent_cli.parse_output import CliActivity
from agentls.llm.messages import Usage

PLANTED = "sk-planted-secret-0123456789abcdef"




@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    return root


def make_env(bin_dir: Path, **extra: str) -> dict[str, str]:
    """Only the stand-ins on PATH, plus a few variables a real environment would have."""
    return {"PATH": str(bin_dir), "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8",
            **extra}


class Recorder:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.activity: list[CliActivity] = []

    def on_text(self, text: str) -> None:
        self.text.append(text)

    def on_event(self, activity: CliActivity) -> None:
        self.activity.append(activity)

    def of(self, kind: str) -> list[CliActivity]:
        return [a for a in self.activity if a.kind == kind]


async def run_cli(cli: Any, cwd: Path, prompt: str = "fix add",
                  **options: Any) -> tuple[ExternalResult, Recorder]:
    seen = Recorder()
    result = await cli.run(prompt, cwd, seen.on_text, seen.on_event, **options)
    return result, seen


def install(tmp_path: Path, **scenarios: str) -> Path:
    folder: Path = standins.install_standins(tmp_path / "bin", scenarios)
    return folder


# --- codex ------------------------------------------------------------------------------------


async def test_codex_streams_its_jsonl_events_as_text_and_activity(
        tmp_path: Path, workspace: Path) -> None:
    bin_dir = install(tmp_path, codex="ok")
    cli = CodexCli(env=make_env(bin_dir))
    result, seen = await run_cli(cli, workspace, prompt="-make add() add")

    assert result.ok and result.exit_code == 0
    assert result.text == "You asked: -make add() add\nFixed add() in calc.py.\nDONE"
    assert "".join(seen.text) == result.text
    assert result.usage == Usage(24763, 122, 24885)
    assert result.session_id == "0199a213-81c0-7800-8aa1-bbab2a035a53"
    started = [(a.name, a.detail) for a in seen.of("tool_started")]
    assert ("shell", "bash -lc 'cat calc.py'") in started
    finished = {a.name: a for a in seen.of("tool_finished")}
    assert finished["shell"].ok and "update" in finished["edit"].detail
    assert any("Reading calc.py" in a.detail for a in seen.of("status"))
    # The CLI edited the files itself.
    assert "a + b" in (workspace / "calc.py").read_text()

    [call] = [c for c in standins.calls(bin_dir) if c["argv"][:1] == ["exec"]]
    assert call["argv"][:4] == ["exec", "--json", "--sandbox", "workspace-write"]
    assert call["argv"][-1] == "-"
    assert call["stdin"] == "-make add() add"  # the prompt came on stdin, whatever it starts with
    assert call["cwd"] == str(workspace)


async def test_codex_model_is_passed_only_when_chosen(tmp_path: Path, workspace: Path) -> None:
    bin_dir = install(tmp_path, codex="ok")
    await run_cli(CodexCli(env=make_env(bin_dir), model="gpt-5-codex"), workspace)
    [call] = [c for c in standins.calls(bin_dir) if c["argv"][:1] == ["exec"]]
    assert call["argv"][4:7] == ["--model", "gpt-5-codex", "-"]


async def test_codex_401_is_an_auth_failure(tmp_path: Path, workspace: Path) -> None:
    bin_dir = install(tmp_path, codex="unauthenticated")
    result, _ = await run_cli(CodexCli(env=make_env(bin_dir)), workspace)
    assert result.failure == "auth" and result.exit_code == 1
    assert "401" in result.message


async def test_codex_turn_failed_is_a_failure_with_its_message(
        tmp_path: Path, workspace: Path) -> None:
    bin_dir = install(tmp_path, codex="failing")
    result, _ = await run_cli(CodexCli(env=make_env(bin_dir)), workspace)
    assert result.failure == "failed" and result.exit_code == 1
    assert result.message == "stream disconnected before completion"
    # The unexplained failure was checked against `codex login status`, which says signed in.
    assert [c["argv"] for c in standins.calls(bin_dir)][-1] == ["login", "status"]


async def test_a_cli_that_hangs_is_stopped_at_the_timeout(tmp_path: Path, workspace: Path) -> None:
    bin_dir = install(tmp_path, codex="hang")
    result, _ = await run_cli(CodexCli(env=make_env(bin_dir)), workspace, timeout_s=0.5)
    assert result.failure == "timeout" and result.exit_code is None
    assert "did not finish within 0.5 s" in result.message
    assert result.session_id == "0199a213-81c0-7800-8aa1-bbab2a035a53"  # what came before


async def test_missing_cli_is_reported_not_raised(tmp_path: Path, workspace: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result, seen = await run_cli(ClaudeCli(env=make_env(empty)), workspace)
    assert result.failure == "missing" and "`claude` is not on PATH" in result.message
    assert seen.text == []


# --- claude -----------------------------------------------------------------------------------


async def test_claude_stream_json_messages(tmp_path: Path, workspace: Path) -> None:
    bin_dir = install(tmp_path, claude="ok")
    result, seen = await run_cli(ClaudeCli(env=make_env(bin_dir)), workspace)

    assert result.ok
    # Two assistant messages: the second starts on its own line.
    assert result.text == "Task: fix add. Let me fix calc.py.\nFixed it.\nDONE"
    assert result.usage == Usage(510, 42, 552)  # cache reads and writes count as prompt
    assert result.session_id == "8f2d1c9e-5b7a-4e1f-9c3d-2a6b8e0f1d4c"
    [started] = seen.of("tool_started")
    [finished] = seen.of("tool_finished")
    assert (started.name, started.call_id) == ("Edit", "toolu_01")
    assert started.detail.endswith("calc.py")
    assert (finished.name, finished.ok, finished.call_id) == ("Edit", True, "toolu_01")
    [call] = [c for c in standins.calls(bin_dir) if "-p" in c["argv"]]
    assert call["argv"] == ["-p", "--output-format", "stream-json", "--verbose",
                            "--permission-mode", "acceptEdits"]
    assert call["stdin"] == "fix add"


async def test_claude_error_result_is_an_auth_failure(tmp_path: Path, workspace: Path) -> None:
    bin_dir = install(tmp_path, claude="unauthenticated")
    result, _ = await run_cli(ClaudeCli(env=make_env(bin_dir)), workspace)
    assert result.failure == "auth"
    assert result.message == "Invalid API key · Please run /login"


async def test_claude_execution_error_is_a_failure(tmp_path: Path, workspace: Path) -> None:
    bin_dir = install(tmp_path, claude="failing")
    result, _ = await run_cli(ClaudeCli(env=make_env(bin_dir)), workspace)
    assert result.failure == "failed"
    assert "Edit could not write calc.py" in result.message


# --- copilot ----------------------------------------------------------------------------------


async def test_copilot_streams_its_text_answer(tmp_path: Path, workspace: Path) -> None:
    bin_dir = install(tmp_path, copilot="ok")
    result, seen = await run_cli(CopilotCli(env=make_env(bin_dir), model="gpt-5.4"), workspace,
                                 prompt="--fix add")
    assert result.ok
    assert result.text == ("Working on: --fix add\nCreated NOTES.md and fixed calc.py.\n"
                           "DONE\n")
    assert "".join(seen.text) == result.text
    [call] = standins.calls(bin_dir)
    assert call["argv"] == ["--prompt=--fix add", "-s", "--allow-all-tools", "--no-ask-user",
                            "--model=gpt-5.4"]


async def test_copilot_without_credentials_fails_as_auth(tmp_path: Path, workspace: Path) -> None:
    bin_dir = install(tmp_path, copilot="unauthenticated")
    result, _ = await run_cli(CopilotCli(env=make_env(bin_dir)), workspace)
    assert result.failure == "auth"
    assert "No authentication information found" in result.message


async def test_copilot_failure_without_explanation_is_failed(
        tmp_path: Path, workspace: Path) -> None:
    bin_dir = install(tmp_path, copilot="failing")
    env = make_env(bin_dir, COPILOT_GITHUB_TOKEN="github_pat_standin")
    result, _ = await run_cli(CopilotCli(env=env), workspace)
    assert result.failure == "failed" and "HTTP 500" in result.message


# --- detection --------------------------------------------------------------------------------


async def test_detection_uses_each_clis_documented_check(tmp_path: Path) -> None:
    bin_dir = install(tmp_path, codex="ok", claude="unauthenticated", copilot="ok", gh="ok")
    env = make_env(bin_dir)

    codex = await CodexCli(env=env).detect()
    assert codex.status == "available"
    assert codex.detail == "Logged in using an API key"  # the masked key is not repeated
    assert codex.path == str(bin_dir / "codex")
    claude = await ClaudeCli(env=env).detect()
    assert (claude.status, claude.detail) == ("unauthenticated", "not signed in")
    copilot = await CopilotCli(env=env).detect()
    assert copilot.status == "available" and "gh auth status" in copilot.detail
    argvs = [(c["name"], c["argv"]) for c in standins.calls(bin_dir)]
    assert ("codex", ["login", "status"]) in argvs
    assert ("claude", ["auth", "status"]) in argvs
    assert ("gh", ["auth", "status"]) in argvs


async def test_copilot_detection_follows_the_documented_token_order(tmp_path: Path) -> None:
    bin_dir = install(tmp_path, copilot="ok", gh="unauthenticated")
    classic = await CopilotCli(env=make_env(bin_dir, GH_TOKEN="ghp_classic")).detect()
    assert classic.status == "unauthenticated" and "classic" in classic.detail
    fine = await CopilotCli(env=make_env(bin_dir, COPILOT_GITHUB_TOKEN="github_pat_x",
                                         GH_TOKEN="ghp_classic")).detect()
    assert (fine.status, fine.detail) == ("available", "token from COPILOT_GITHUB_TOKEN")
    nothing = await CopilotCli(env=make_env(bin_dir)).detect()
    assert nothing.status == "unauthenticated" and "keychain" in nothing.detail


async def test_detection_reports_missing_and_hung_checks(tmp_path: Path) -> None:
    bin_dir = install(tmp_path, claude="hang")
    assert (await CodexCli(env=make_env(bin_dir)).detect()).status == "missing"
    hung = await ClaudeCli(env=make_env(bin_dir)).detect(timeout=0.3)
    assert hung.status == "unauthenticated" and "did not answer" in hung.detail
    with_key = await ClaudeCli(env=make_env(bin_dir, ANTHROPIC_API_KEY="sk-ant-x")).detect(
        timeout=0.3)
    assert (with_key.status, with_key.detail) == ("available", "ANTHROPIC_API_KEY is set")


def test_known_clis_without_an_adapter_are_listed(tmp_path: Path) -> None:
    bin_dir = install(tmp_path, gemini="ok")
    [found] = installed_unsupported(make_env(bin_dir))
    assert (found.name, found.label, found.path) == ("gemini", "Gemini CLI",
                                                     str(bin_dir / "gemini"))


# --- secrets ----------------------------------------------------------------------------------


def test_child_environment_drops_secrets_and_keeps_the_tools_own_sign_in() -> None:
    env = {"PATH": "/bin", "HOME": "/home/me", "OPENAI_API_KEY": PLANTED,
           "SCRIPTED_KEY": PLANTED, "GITHUB_TOKEN": "ghs_x", "DB_PASSWORD": "p",
           "AWS_SECRET_ACCESS_KEY": "a", "AGENTLS_BACKEND": "openai", "CODEX_API_KEY": "sk-c",
           "MY_CREDENTIALS": "c"}
    child = child_environment(env, keep=("CODEX_API_KEY", "OPENAI_API_KEY"),
                              ours=("SCRIPTED_KEY", "OPENAI_API_KEY"))
    assert child == {"PATH": "/bin", "HOME": "/home/me", "CODEX_API_KEY": "sk-c"}


@pytest.mark.parametrize("kind", ["codex", "claude", "copilot"])
async def test_planted_secret_never_reaches_the_cli(
        kind: str, tmp_path: Path, workspace: Path) -> None:
    bin_dir = install(tmp_path, **{kind: "failing", "gh": "unauthenticated"})
    env = make_env(bin_dir, OPENAI_API_KEY=PLANTED, SCRIPTED_KEY=PLANTED,
                   HF_TOKEN=PLANTED, AGENTLS_BACKENDS__X__MODEL="m",
                   ANTHROPIC_API_KEY="sk-ant-standin", CODEX_API_KEY="sk-codex-standin",
                   COPILOT_GITHUB_TOKEN="github_pat_standin")
    cli = adapter_for(kind, env=env, secret_names=["SCRIPTED_KEY", "OPENAI_API_KEY"])  # type: ignore[arg-type]
    await cli.detect()
    await run_cli(cli, workspace)

    own = {"codex": "CODEX_API_KEY", "claude": "ANTHROPIC_API_KEY",
           "copilot": "COPILOT_GITHUB_TOKEN"}[kind]
    seen_by_cli = standins.calls(bin_dir)
    assert any(c["name"] == kind and c["cwd"] == str(workspace) for c in seen_by_cli)
    for call in seen_by_cli:  # sign-in checks and runs alike
        child_env: dict[str, str] = call["env"]
        assert PLANTED not in child_env.values()
        assert not {"OPENAI_API_KEY", "SCRIPTED_KEY", "HF_TOKEN"} & set(child_env)
        assert not any(name.startswith("AGENTLS_") for name in child_env)
        assert own in child_env  # the tool's own documented sign-in variable is kept


async def test_our_api_key_env_wins_over_the_tools_own_variable(
        tmp_path: Path, workspace: Path) -> None:
    bin_dir = install(tmp_path, claude="ok")
    env = make_env(bin_dir, ANTHROPIC_API_KEY=PLANTED)
    cli = ClaudeCli(env=env, secret_names=["ANTHROPIC_API_KEY"])  # agentls reads that key
    await run_cli(cli, workspace)
    for call in standins.calls(bin_dir):
        assert "ANTHROPIC_API_KEY" not in call["env"]


def test_adapters_describe_what_to_do() -> None:
    make: Callable[..., Any]
    for make in (CodexCli, CopilotCli, ClaudeCli):
        cli = make(env={"PATH": ""})
        assert cli.install_hint.startswith("install it: npm install -g ")
        assert "login" in cli.login_hint
