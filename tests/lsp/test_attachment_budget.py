"""Attachments over the model's context are cut to fit, with a note the person sees, instead
of failing the chat with `context_too_long`: a real `agentls serve`, the scripted model, a
model of 8,000 tokens and four big attached files."""

from __future__ import annotations

from pathlib import Path

from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import AgentClient, initialize, options_for

CONTEXT = 8_000


def _big(root: Path, name: str, lines: int) -> Path:
    path = root / "src" / name
    path.write_text("".join(f"def f{i}(x):\n    return x * {i}  # step {i} of the work\n"
                            for i in range(lines // 2)))
    return path


async def test_big_attachments_are_cut_to_the_context_with_a_note(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    options = options_for(model)
    options["backends"]["scripted"]["context_max_tokens"] = CONTEXT
    await initialize(bare_client, client_capabilities("visual-studio-code"), project, options)
    model.load({"steps": [{"reply": {"text": "read them"}, "times": "*"}]})
    files = [_big(project, f"big{i}.py", 4_000) for i in range(4)]

    result = await bare_client.chat("What do these files do?",
                                    context={"files": [f.as_uri() for f in files]})

    assert result["stopReason"] == "done", result.get("error")
    [request] = [r for r in model.requests if r.path.endswith("/chat/completions")]
    user = request.body["messages"][-1]["content"]
    assert len(user) // 4 < CONTEXT  # about four characters a token
    for i in range(4):
        assert f"## File: src/big{i}.py (cut to" in user
    assert user.rstrip().endswith("What do these files do?")
    notes = [e["message"] for e in bare_client.events(result["runId"], "status")]
    assert any("src/big0.py was cut" in n for n in notes), notes


async def test_with_no_room_left_a_file_is_left_out_saying_what_to_do(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    options = options_for(model)
    options["backends"]["scripted"]["context_max_tokens"] = 6_000
    await initialize(bare_client, client_capabilities("neovim"), project, options)
    model.load({"steps": [{"reply": {"text": "ok"}, "times": "*"}]})
    files = [_big(project, f"big{i}.py", 2_000) for i in range(12)]

    result = await bare_client.chat("Summarise.", context={"files": [f.as_uri() for f in files]})

    assert result["stopReason"] == "done", result.get("error")
    notes = " ".join(e["message"] for e in bare_client.events(result["runId"], "status"))
    assert "no room for it next to the request" in notes
    assert "attach fewer files" in notes
