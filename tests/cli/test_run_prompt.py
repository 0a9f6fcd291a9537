"""Where `agentls run` takes its prompt from: inline words, -p, a file, or stdin."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.headless_helpers import agentls, last_json, write

from agentls.cli.run import PromptSource, PromptUsageError, prompt_source
from agentls.devtools.replay.command import ReplayServer


def test_positional_words_are_the_prompt(
        server: ReplayServer, env: dict[str, str], project: Path) -> None:
    server.load({"steps": [{"match": {"user": "fix the failing test"},
                            "reply": {"text": "inline ok"}}]})
    done = agentls("run", "fix the failing test", "--cwd", str(project), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "inline ok\n"


def test_unquoted_words_are_joined(
        server: ReplayServer, env: dict[str, str], project: Path) -> None:
    server.load({"steps": [{"match": {"user": "explain calc please"},
                            "reply": {"text": "joined"}}]})
    done = agentls("run", "explain", "calc", "please", "--cwd", str(project), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "joined\n"


def test_dash_p_is_never_a_file(
        server: ReplayServer, env: dict[str, str], project: Path) -> None:
    write(project / "README", "this file must not be read as the prompt\n")
    server.load({"steps": [{"match": {"user": "README"}, "reply": {"text": "word sent"}}]})
    done = agentls("run", "-p", "README", "--cwd", str(project), "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert last_json(done.stdout)["text"] == "word sent"


def test_an_existing_file_wins_over_text(
        server: ReplayServer, env: dict[str, str], project: Path) -> None:
    write(project / "task.md", "the prompt from the file\n")
    server.load({"steps": [{"match": {"user": "from the file"}, "reply": {"text": "file"}}]})
    done = agentls("run", "task.md", "--cwd", str(project), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "file\n"


def test_a_single_unknown_word_is_a_missing_file_with_a_hint(
        env: dict[str, str], project: Path) -> None:
    done = agentls("run", "tsk.md", "--cwd", str(project), "--json", env=env)
    assert done.returncode == 66
    result = last_json(done.stdout)
    assert result["stopReason"] == "prompt-not-found"
    assert "use -p" in result["error"]["hint"]


def test_both_forms_at_once_is_a_usage_error(env: dict[str, str], project: Path) -> None:
    done = agentls("run", "fix it now", "-p", "other", "--cwd", str(project), "--json", env=env)
    assert done.returncode == 64
    assert "not both" in last_json(done.stdout)["error"]["message"]


def test_no_prompt_at_all_says_how_to_give_one(env: dict[str, str], project: Path) -> None:
    done = agentls("run", "--cwd", str(project), env=env)
    assert done.returncode == 64
    assert "-p TEXT" in done.stderr


@pytest.mark.parametrize(("words", "text", "expected"), [
    (["-"], None, PromptSource(file="-")),
    (["a", "b"], None, PromptSource(text="a b")),
    (["two words"], None, PromptSource(text="two words")),
    (["missing.md"], None, PromptSource(file="missing.md")),
    ([], "inline", PromptSource(text="inline")),
])
def test_prompt_source_rules(tmp_path: Path, words: list[str], text: str | None,
                             expected: PromptSource) -> None:
    assert prompt_source(words, text, tmp_path) == expected


def test_prompt_source_refuses_both(tmp_path: Path) -> None:
    with pytest.raises(PromptUsageError):
        prompt_source(["x"], "y", tmp_path)
