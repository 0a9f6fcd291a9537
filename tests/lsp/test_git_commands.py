"""agentls.commitMessage and agentls.prDescription end to end: a real git repository, the real
server, the scripted model."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import AgentClient, last_user_message

LONG_SUBJECT = ("fix(calc): make add return the sum of both of its arguments instead of "
                "their difference, which broke every caller")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True).stdout


def make_repo(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "T")
    git(root, "config", "commit.gpgsign", "false")
    git(root, "add", ".")
    git(root, "commit", "-qm", "init")


async def execute(client: AgentClient, command: str, *arguments: Any) -> Any:
    return await client.send("workspace/executeCommand", lsp.ExecuteCommandParams(
        command=command, arguments=list(arguments)))


async def test_commit_message_for_the_staged_diff_keeps_the_subject_short(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    make_repo(project)
    (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(project, "add", "src/calc.py")
    (project / "README.md").write_text("# calc, unstaged edit\n")
    model.load({"steps": [{"reply": {
        "text": f"```\n{LONG_SUBJECT}\n\nCallers got wrong totals.\n```"}}]})

    message = await execute(client, "agentls.commitMessage")

    subject, blank, *body = message.splitlines()
    assert len(subject) <= 72 and subject.startswith("fix(calc): make add return the sum")
    assert blank == ""
    assert "Callers got wrong totals." in body
    assert "which broke every caller." in " ".join(body)  # the cut words are kept below
    request = model.requests[0].body
    assert "Conventional Commits" in request["messages"][0]["content"]
    sent = last_user_message(request)
    assert "+    return a + b" in sent and "src/calc.py" in sent
    assert "unstaged edit" not in sent


async def test_commit_message_errors_say_what_to_do(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    with pytest.raises(JsonRpcException) as not_a_repo:
        await execute(client, "agentls.commitMessage")
    assert not_a_repo.value.code == -32803
    assert "not inside a git repository" in not_a_repo.value.message
    make_repo(project)
    (project / "README.md").write_text("changed but not staged\n")
    with pytest.raises(JsonRpcException) as nothing_staged:
        await execute(client, "agentls.commitMessage", {"root": project.as_uri()})
    assert "Nothing is staged" in nothing_staged.value.message
    assert "git add" in nothing_staged.value.message
    assert model.requests == []


async def test_secrets_staged_by_mistake_never_reach_the_model(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    make_repo(project)
    (project / ".env").write_text("OPENAI_API_KEY=sk-very-secret\n")
    (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(project, "add", "-f", ".env", "src/calc.py")
    model.load({"steps": [{"reply": {"text": "fix: add numbers"}}]})

    assert await execute(client, "agentls.commitMessage") == "fix: add numbers"

    sent = last_user_message(model.requests[0].body)
    assert "sk-very-secret" not in sent and ".env" not in sent
    assert "1 staged file(s) are hidden" in sent


async def test_pr_description_of_a_branch_against_main(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    make_repo(project)
    git(project, "checkout", "-qb", "fix-add")
    (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(project, "commit", "-qam", "fix add")
    model.load({"steps": [{"reply": {
        "text": "## Summary\nFixes add().\n\n## Changes\n- add() returns a + b"}}]})

    description = await execute(client, "agentls.prDescription")

    assert description == ("## Summary\nFixes add().\n\n## Changes\n- add() returns a + b\n\n"
                           "## Testing\n(not described: say how this was tested)\n")
    sent = last_user_message(model.requests[0].body)
    assert "Branch: fix-add" in sent and "Base: main" in sent
    assert "fix add" in sent and "+    return a + b" in sent
    assert "## Testing" in model.requests[0].body["messages"][0]["content"]


async def test_pr_description_without_a_base_says_how_to_name_one(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    make_repo(project)
    git(project, "branch", "-m", "main", "trunk")
    with pytest.raises(JsonRpcException) as no_base:
        await execute(client, "agentls.prDescription")
    assert "Could not find the base branch" in no_base.value.message
    git(project, "checkout", "-qb", "topic")
    (project / "README.md").write_text("# calc\nmore\n")
    git(project, "commit", "-qam", "docs")
    model.load({"steps": [{"reply": {"text": "## Summary\nDocs."}}]})

    description = await execute(client, "agentls.prDescription", {"base": "trunk"})

    assert description.startswith("## Summary\nDocs.\n\n## Changes\n")
    with pytest.raises(JsonRpcException) as bad:
        await execute(client, "agentls.prDescription", {"colour": "red"})
    assert bad.value.code == -32602 and '"base"' in bad.value.message
