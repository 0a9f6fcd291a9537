"""Approvals and the model's questions through window/showMessageRequest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import (
    CLIENTS,
    AgentClient,
    call,
    initialize,
    options_for,
    tool_result_text,
)

ECHO = "echo hello-from-the-agent"  # not on the shell allow list: needs approval


@pytest.fixture(autouse=True)
def ask_even_when_sandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about approvals: the server asks for commands though it sandboxes them."""
    monkeypatch.setenv("AGENTLS_SANDBOX__ASK", "true")


def shell_script(turns: int = 1) -> dict[str, Any]:
    return {"steps": [
        {"match": {"tool_results": False}, "times": turns, "reply": {"tool_calls": [
            call("shell_exec", "s1", command=ECHO)]}},
        {"match": {"tool": "shell_exec"}, "times": turns, "reply": {"text": "Ran it."}},
    ]}


def shell_result(model: ReplayServer) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(tool_result_text(model.requests[-1].body, "s1"))
    return result


async def test_allow_once_runs_the_command(client: AgentClient, model: ReplayServer) -> None:
    model.load(shell_script())
    client.answer = lambda params: "Allow once"

    result = await client.chat("say hello")

    assert result["stopReason"] == "done"
    [prompt] = client.prompts
    assert [a.title for a in prompt.actions or ()] == [
        "Allow once", "Allow for this session", "Deny"]
    assert ECHO in prompt.message
    # A message box shows no markdown, and says how the command runs once.
    assert "`" not in prompt.message, prompt.message
    assert prompt.message.lower().count("sandboxed") <= 1, prompt.message
    # The status line (work-done progress) says what waits, in plain text too.
    waiting = [r.message for reports in client.progress_reports.values() for r in reports
               if getattr(r, "message", None) and "waiting for approval" in r.message]
    assert waiting == [f"waiting for approval: Run “{ECHO}”?"], waiting
    ran = shell_result(model)
    assert ran["ok"] and "hello-from-the-agent" in json.dumps(ran)


async def test_deny_refuses_the_command(client: AgentClient, model: ReplayServer) -> None:
    model.load(shell_script())
    client.answer = lambda params: "Deny"

    await client.chat("say hello")

    refused = shell_result(model)
    assert not refused["ok"] and refused["error"] == "USER_REJECTED"
    assert "hello-from-the-agent" not in str(refused.get("stdout", ""))


async def test_allow_for_this_session_asks_once(client: AgentClient,
                                                model: ReplayServer) -> None:
    model.load(shell_script(turns=2))
    client.answer = lambda params: "Allow for this session"

    first = await client.chat("say hello")
    await client.chat("say hello again", sessionId=first["sessionId"])

    assert len(client.prompts) == 1
    assert shell_result(model)["ok"]


async def test_ask_user_offers_the_models_options(client: AgentClient,
                                                  model: ReplayServer) -> None:
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("ask_user", "q1", question="Tabs or spaces?", options=["tabs", "spaces"])]}},
        {"match": {"tool": "ask_user"}, "reply": {"text": "Spaces it is."}},
    ]})
    client.answer = lambda params: "spaces"

    result = await client.chat("format it")

    [prompt] = client.prompts
    assert "Tabs or spaces?" in prompt.message
    assert [a.title for a in prompt.actions or ()] == ["tabs", "spaces"]
    answer = json.loads(tool_result_text(model.requests[-1].body, "q1"))
    assert answer == {"ok": True, "answer": "spaces"}
    assert result["text"] == "Spaces it is."


@pytest.mark.parametrize("editor", CLIENTS)
async def test_a_client_that_cannot_show_prompts_means_deny(
        bare_client: AgentClient, model: ReplayServer, project: Path, editor: str) -> None:
    capabilities = client_capabilities(editor)
    assert capabilities.window is not None
    capabilities.window.show_message = None
    await initialize(bare_client, capabilities, project, options_for(model))
    model.load(shell_script())

    result = await bare_client.chat("say hello")

    assert bare_client.prompts == []
    assert shell_result(model)["error"] == "USER_REJECTED"
    told = [e["message"] for e in bare_client.events(result["runId"], "status")]
    assert any("cannot show approval prompts" in m for m in told)


@pytest.mark.parametrize("editor", CLIENTS)
async def test_a_client_that_cannot_show_questions_lets_the_model_decide(
        bare_client: AgentClient, model: ReplayServer, project: Path, editor: str) -> None:
    capabilities = client_capabilities(editor)
    assert capabilities.window is not None
    capabilities.window.show_message = None
    await initialize(bare_client, capabilities, project, options_for(model))
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("ask_user", "q1", question="Tabs or spaces?", options=["tabs", "spaces"])]}},
        {"match": {"tool": "ask_user"}, "reply": {"text": "Spaces, then."}},
    ]})

    result = await bare_client.chat("style?")

    assert bare_client.prompts == []
    answer = json.loads(tool_result_text(model.requests[-1].body, "q1"))
    assert answer["error"] == "NO_ONE_TO_ASK"
    told = [e["message"] for e in bare_client.events(result["runId"], "status")]
    assert any("cannot show questions" in m for m in told)
