"""agentls/proposeEdit (a chat code block's Apply) over real LSP: the text replaces the range
through the same review as an agent's edit (one workspace/applyEdit, needsConfirmation for VS
Code), the answer is checked against the document and recorded in the chat's session (the
model hears of a discarded one), and bad input is refused with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import (
    AgentClient,
    initialize,
    last_user_message,
    open_document,
    options_for,
)

CALC = "def add(a, b):\n    return a - b\n"
FIXED = 'def add(a, b):\n    """Sum."""\n    return a + b\n'
WHOLE = {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}}


async def _start(client: AgentClient, model: ReplayServer, project: Path) -> tuple[str, str]:
    """The document's URI and the session of a chat whose answer had the code block."""
    await initialize(client, client_capabilities("visual-studio-code"), project,
                     options_for(model))
    model.load({"steps": [{"reply": {"text": "```python\n" + FIXED + "```"}, "times": "*"}]})
    chat = await client.chat("document add")
    return open_document(client, project / "src" / "calc.py", CALC), chat["sessionId"]


async def test_the_code_replaces_the_selection_through_the_review(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    uri, session = await _start(bare_client, model, project)

    answer = await bare_client.send("agentls/proposeEdit", {"sessionId": session, "uri": uri,
                                                            "range": WHOLE, "text": FIXED})

    assert answer == {"applied": True}
    [sent] = bare_client.edits
    assert sent.label == "AgentLS: apply the code block"
    annotations = sent.edit.change_annotations or {}
    assert annotations and all(a.needs_confirmation for a in annotations.values())
    [change] = sent.edit.document_changes or []
    assert isinstance(change, lsp.TextDocumentEdit) and change.text_document.version == 1
    assert bare_client.open_texts[uri] == (2, FIXED)
    assert (project / "src" / "calc.py").read_text() == CALC  # the editor decides what lands


async def test_a_discarded_proposal_says_so(bare_client: AgentClient, model: ReplayServer,
                                            project: Path) -> None:
    uri, session = await _start(bare_client, model, project)
    bare_client.apply_result = lsp.ApplyWorkspaceEditResult(
        applied=False, failure_reason="discarded in the refactor preview")

    answer = await bare_client.send("agentls/proposeEdit", {"sessionId": session, "uri": uri,
                                                            "range": WHOLE, "text": FIXED})

    assert answer == {"applied": False, "failureReason": "discarded in the refactor preview"}
    assert bare_client.open_texts[uri] == (1, CALC)
    await bare_client.chat("and now?", sessionId=session)  # the model hears what became of it
    assert "rejected your changes to src/calc.py" in last_user_message(model.requests[-1].body)


@pytest.mark.parametrize(("params", "says"), [
    ({"sessionId": "S", "range": WHOLE, "text": "x"}, "needs"),
    ({"uri": "CALC", "range": WHOLE, "text": "x"}, "needs"),
    ({"sessionId": "S", "uri": "file:///nowhere/closed.py", "range": WHOLE, "text": "x"},
     "not open"),
    ({"sessionId": "S", "uri": "CALC", "range": {"start": {"line": 0}}, "text": "x"},
     "character"),
    ({"sessionId": "no-such-session", "uri": "CALC", "range": WHOLE, "text": "x"},
     "no session"),
])
async def test_bad_input_is_refused_with_the_reason(
        bare_client: AgentClient, model: ReplayServer, project: Path,
        params: dict[str, object], says: str) -> None:
    uri, session = await _start(bare_client, model, project)
    if params.get("uri") == "CALC":
        params = {**params, "uri": uri}
    if params.get("sessionId") == "S":
        params = {**params, "sessionId": session}

    with pytest.raises(JsonRpcException, match=says):
        await bare_client.send("agentls/proposeEdit", params)
    assert bare_client.edits == []


async def test_a_file_the_fence_hides_is_not_changed(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    _, session = await _start(bare_client, model, project)
    secret = open_document(bare_client, project / ".env", "KEY=1\n")

    with pytest.raises(JsonRpcException, match=r"does not change \.env"):
        await bare_client.send("agentls/proposeEdit", {"sessionId": session, "uri": secret,
                                                       "range": WHOLE, "text": "KEY=2\n"})
    assert bare_client.edits == []
