"""Code actions end to end: listed instantly, resolved by the agent into a versioned edit (or
run as the agentls.runAction command by clients that cannot resolve); the real server, the
scripted model, VS Code's and Neovim's recorded capabilities."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Union

import attrs
import pytest
from lsprotocol import types as lsp
from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import (
    CLIENTS,
    WAIT_S,
    AgentClient,
    apply_text_edits,
    call,
    initialize,
    last_user_message,
    open_document,
    options_for,
)

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
FIX_CALL = call("edit_file", "e1", path="src/calc.py",
                edits=[{"search": "def add(a, b):\n    return a - b",
                        "replace": "def add(a, b):\n    return a + b"}])
FIXED = CALC.replace("return a - b", "return a + b", 1)


def rng(sl: int, sc: int, el: int, ec: int) -> lsp.Range:
    return lsp.Range(lsp.Position(sl, sc), lsp.Position(el, ec))


WRONG_OPERATOR = lsp.Diagnostic(rng(1, 11, 1, 16), "add() subtracts",
                                lsp.DiagnosticSeverity.Error, source="review")


def open_calc(client: AgentClient, project: Path, version: int = 1) -> str:
    return open_document(client, project / "src" / "calc.py", CALC, version)


def read_code_actions_as_editors_do(client: AgentClient) -> None:
    """lsprotocol reads any result item with a ``command`` key as a Command, even a
    CodeAction whose ``command`` is an object (Explain's); editors look at its type."""
    converter = client.protocol._converter

    def structure(item: Any, _: type) -> lsp.Command | lsp.CodeAction:
        if isinstance(item.get("command"), str):
            return converter.structure(item, lsp.Command)
        return converter.structure(item, lsp.CodeAction)

    converter.register_structure_hook(Union[lsp.Command, lsp.CodeAction], structure)  # noqa: UP007


async def list_actions(client: AgentClient, uri: str, selection: lsp.Range,
                       diagnostics: list[lsp.Diagnostic] | None = None,
                       only: list[str] | None = None) -> list[lsp.CodeAction]:
    read_code_actions_as_editors_do(client)
    result = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri), range=selection,
        context=lsp.CodeActionContext(diagnostics=diagnostics or [], only=only)))
    actions = [a for a in result or () if isinstance(a, lsp.CodeAction)]
    assert len(actions) == len(result or ())  # code actions, never bare commands
    return actions


def data_of(action: lsp.CodeAction) -> dict[str, Any]:
    """The action's data (JSON text, opaque to editors)."""
    assert isinstance(action.data, str)
    data = json.loads(action.data)
    assert isinstance(data, dict)
    return data


def titled(actions: list[lsp.CodeAction], title: str) -> lsp.CodeAction:
    return next(a for a in actions if a.title == title)


async def execute(client: AgentClient, command: lsp.Command) -> Any:
    return await client.send("workspace/executeCommand", lsp.ExecuteCommandParams(
        command=command.command, arguments=command.arguments))


def single_document_edit(edit: lsp.WorkspaceEdit | None) -> lsp.TextDocumentEdit:
    assert edit is not None
    changes = list(edit.document_changes or ())
    assert len(changes) == 1 and isinstance(changes[0], lsp.TextDocumentEdit)
    return changes[0]


async def test_a_diagnostic_and_a_selection_list_their_actions_without_edits(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    uri = open_calc(client, project, version=3)

    at_cursor = await list_actions(client, uri, rng(1, 12, 1, 12), [WRONG_OPERATOR])
    selected = await list_actions(client, uri, rng(0, 0, 2, 0), [WRONG_OPERATOR])

    assert [a.title for a in at_cursor] == ["AgentLS: Fix 'add() subtracts'", "AgentLS: Explain"]
    assert [(a.title, a.kind) for a in selected] == [
        ("AgentLS: Fix 'add() subtracts'", "quickfix"),
        ("AgentLS: Rewrite selection…", "refactor.rewrite"),
        ("AgentLS: Add documentation", "refactor.rewrite"),
        ("AgentLS: Write tests", "refactor.rewrite"),
        ("AgentLS: Explain", ""),
    ]
    explain = selected[-1]
    assert explain.command is not None and explain.command.arguments is not None
    carried: list[Any] = [data_of(a) for a in selected[:-1]] + list(explain.command.arguments)
    for action, data in zip(selected, carried, strict=True):
        assert action.edit is None
        assert data["uri"] == uri and data["version"] == 3
        assert data["range"] == {"start": {"line": 0, "character": 0},
                                 "end": {"line": 2, "character": 0}}
    fix = selected[0]
    assert data_of(fix)["action"] == "fix" and list(fix.diagnostics or ()) == [WRONG_OPERATOR]
    # Both editors resolve edits lazily; only Explain (which shows text) is a command.
    assert [a.command is not None for a in selected] == [False] * 4 + [True]
    assert model.requests == []  # listing never asks the model


async def test_only_filters_the_kinds(client: AgentClient, project: Path) -> None:
    uri = open_calc(client, project)
    selection = rng(0, 0, 2, 0)

    quickfixes = await list_actions(client, uri, selection, [WRONG_OPERATOR], only=["quickfix"])
    refactors = await list_actions(client, uri, selection, [WRONG_OPERATOR], only=["refactor"])
    sources = await list_actions(client, uri, selection, [WRONG_OPERATOR], only=["source"])

    assert [a.title for a in quickfixes] == ["AgentLS: Fix 'add() subtracts'"]
    assert {a.kind for a in refactors} == {"refactor.rewrite"} and len(refactors) == 3
    assert sources == []


async def test_a_document_that_is_not_open_has_no_actions(client: AgentClient,
                                                          project: Path) -> None:
    uri = (project / "src" / "main.py").as_uri()
    assert await list_actions(client, uri, rng(0, 0, 1, 0)) == []


async def test_resolve_returns_a_versioned_minimal_edit(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [FIX_CALL]}},
        {"match": {"tool_results": True}, "reply": {"text": "add() now adds."}},
    ]})
    uri = open_calc(client, project, version=5)
    on_disk = (project / "src" / "calc.py").read_text()
    (fix, _explain) = await list_actions(client, uri, rng(1, 12, 1, 12), [WRONG_OPERATOR])

    resolved = await client.code_action_resolve_async(fix)

    document_edit = single_document_edit(resolved.edit)
    assert document_edit.text_document.uri == uri
    assert document_edit.text_document.version == 5
    (only_edit,) = document_edit.edits
    assert isinstance(only_edit, lsp.TextEdit | lsp.AnnotatedTextEdit)
    assert only_edit.new_text == "+"
    assert apply_text_edits(CALC, document_edit.edits) == FIXED
    assert (project / "src" / "calc.py").read_text() == on_disk  # the editor applies, not us
    body = model.requests[0].body
    prompt = last_user_message(body)
    assert "add() subtracts" in prompt and "Change only src/calc.py" in prompt
    tools = {t["function"]["name"] for t in body["tools"]}
    assert {"edit_file", "read_file", "search_text"} <= tools
    assert not tools & {"shell_exec", "delete_file"}
    assert client.edits == []  # resolve returns the edit; it does not push one


def problems(count: int) -> list[lsp.Diagnostic]:
    return [lsp.Diagnostic(rng(line % 6, 0, line % 6, 3), f"problem number {line}",
                           lsp.DiagnosticSeverity.Warning, source="lint")
            for line in range(count)]


async def test_many_problems_list_one_grouped_fix_above_a_handful(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    uri = open_calc(client, project)
    whole = await list_actions(client, uri, rng(0, 0, 6, 0), problems(50))
    on_a_line = await list_actions(client, uri, rng(1, 4, 1, 4), WRONG_OPERATOR_AND(1))

    titles = [a.title for a in whole]
    assert titles[0] == "AgentLS: Fix the 50 problems in the selection"
    assert titles[1:6] == [f"AgentLS: Fix 'problem number {n}'" for n in range(5)]
    assert titles[6:] == ["AgentLS: Rewrite selection…", "AgentLS: Add documentation",
                          "AgentLS: Write tests", "AgentLS: Explain"]
    grouped = whole[0]
    assert grouped.kind == "quickfix" and not grouped.diagnostics
    assert data_of(grouped)["action"] == "fixall"
    answer = json.dumps(client.protocol._converter.unstructure(whole))
    assert len(answer) <= 5_000, len(answer)  # the menu stays small whatever the count
    assert [a.title for a in on_a_line][:1] == ["AgentLS: Fix the 2 problems on this line"]


def WRONG_OPERATOR_AND(extra: int) -> list[lsp.Diagnostic]:
    return [WRONG_OPERATOR, *problems(extra + 1)[1:extra + 1]]


async def test_the_grouped_fix_runs_once_with_every_problem(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [FIX_CALL]}},
        {"match": {"tool_results": True}, "reply": {"text": "Fixed them."}},
    ]})
    uri = open_calc(client, project, version=2)
    listed = await list_actions(client, uri, rng(0, 0, 6, 0), problems(12))

    resolved = await client.code_action_resolve_async(listed[0])

    assert apply_text_edits(CALC, single_document_edit(resolved.edit).edits) == FIXED
    assert len(model.requests) == 2  # one run: the edit step and its answer
    prompt = last_user_message(model.requests[0].body)
    assert "Fix these 12 problems in src/calc.py" in prompt
    assert all(f"problem number {n}" in prompt for n in range(12))


async def test_a_grouped_fix_the_server_no_longer_knows_says_so(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    uri = open_calc(client, project, version=2)
    listed = await list_actions(client, uri, rng(0, 0, 6, 0), problems(3))
    forgotten = attrs.evolve(listed[0], data=listed[0].data.replace(  # type: ignore[union-attr]
        '"line":0', '"line":1', 1))

    resolved = await client.code_action_resolve_async(forgotten)

    assert resolved.edit is None
    assert any("no longer known" in m.message for m in client.messages)
    assert model.requests == []


async def test_changes_to_other_files_are_left_out_and_said(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            FIX_CALL,
            call("write_file", "w1", path="src/main.py", content="print('hijacked')\n",
                 mode="overwrite"),
        ]}},
        {"match": {"tool_results": True}, "reply": {"text": "Done."}},
    ]})
    uri = open_calc(client, project)
    (fix, _explain) = await list_actions(client, uri, rng(1, 12, 1, 12), [WRONG_OPERATOR])

    resolved = await client.code_action_resolve_async(fix)

    assert single_document_edit(resolved.edit).text_document.uri == uri
    (message,) = [m for m in client.messages if "src/main.py" in m.message]
    assert "may only change src/calc.py" in message.message


async def test_a_document_changed_since_listing_gets_no_edit_and_a_message(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    uri = open_calc(client, project)
    (fix, _explain) = await list_actions(client, uri, rng(1, 12, 1, 12), [WRONG_OPERATOR])
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text="# edited\n" + CALC)]))

    resolved = await client.code_action_resolve_async(fix)

    assert resolved.edit is None
    assert any("changed since this action was offered" in m.message for m in client.messages)
    assert model.requests == []  # nothing ran


async def test_a_document_changed_during_the_run_gets_no_edit(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [FIX_CALL]}},
        # The model answers late, so the person's edit lands while the run is still going.
        {"match": {"tool_results": True}, "reply": {"text": "Fixed.", "first_delay_s": 1.0}},
    ]})
    uri = open_calc(client, project)
    (fix, _explain) = await list_actions(client, uri, rng(1, 12, 1, 12), [WRONG_OPERATOR])
    resolving = asyncio.ensure_future(client.code_action_resolve_async(fix))
    await client.wait_for_event(lambda e: e["kind"] == "toolResult" and e["name"] == "edit_file")
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=CALC + "# more\n")]))

    resolved = await asyncio.wait_for(resolving, 30)

    assert resolved.edit is None
    assert any("src/calc.py changed since this action was offered" in m.message
               for m in client.messages)


async def test_a_model_that_changes_nothing_is_reported(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    model.load({"steps": [{"reply": {"text": "This code is fine as it is."}}]})
    uri = open_calc(client, project)
    actions = await list_actions(client, uri, rng(0, 0, 2, 0))

    resolved = await client.code_action_resolve_async(
        titled(actions, "AgentLS: Rewrite selection…"))

    assert resolved.edit is None
    (message,) = [m for m in client.messages if "no change" in m.message]
    assert "This code is fine as it is." in message.message


@pytest.mark.parametrize("editor", CLIENTS)
async def test_user_defined_actions_fill_their_placeholders(
        bare_client: AgentClient, editor: str, project: Path, model: ReplayServer) -> None:
    options = options_for(model)
    options["actions"] = [
        {"title": "Translate comments", "prompt": "Translate the comments of {selection} in "
         "{file} ({language}) to French. Known problems: {diagnostics}. Keep {braces}."},
        {"title": "Audit", "kind": "source", "prompt": "Audit {file}"},
    ]
    await initialize(bare_client, client_capabilities(editor), project, options)
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [FIX_CALL]}},
        {"match": {"tool_results": True}, "reply": {"text": "Done."}},
    ]})
    uri = open_calc(bare_client, project)

    actions = await list_actions(bare_client, uri, rng(0, 0, 2, 0), [WRONG_OPERATOR])
    sources = await list_actions(bare_client, uri, rng(0, 0, 2, 0), only=["source"])
    translate = titled(actions, "AgentLS: Translate comments")
    resolved = await bare_client.code_action_resolve_async(translate)

    assert translate.kind == "refactor.rewrite"
    assert list(translate.diagnostics or ()) == [WRONG_OPERATOR]
    assert [(a.title, a.kind) for a in sources] == [("AgentLS: Audit", "source")]
    prompt = last_user_message(model.requests[0].body)
    assert ("Translate the comments of def add(a, b):\n    return a - b\n in src/calc.py "
            "(python) to French. Known problems: - error at line 2: add() subtracts "
            "(review). Keep {braces}.") in prompt
    assert apply_text_edits(CALC, single_document_edit(resolved.edit).edits) == FIXED


@pytest.mark.parametrize("editor", CLIENTS)
async def test_a_bad_user_action_is_reported_and_the_others_kept(
        bare_client: AgentClient, editor: str, project: Path, model: ReplayServer) -> None:
    options = options_for(model)
    options["actions"] = [{"title": "Good", "prompt": "x"}, {"title": "Bad", "kind": "a b",
                                                            "prompt": "y"}]
    await initialize(bare_client, client_capabilities(editor), project, options)
    uri = open_calc(bare_client, project)

    actions = await list_actions(bare_client, uri, rng(0, 0, 0, 0))

    # Listed from the client's section as fetched, without waiting for the engine settings
    # to be built from it; the problem is reported once they are, a moment later.
    assert [a.title for a in actions] == ["AgentLS: Explain", "AgentLS: Good"]
    found: list[lsp.ShowMessageParams] = []
    for _ in range(WAIT_S * 20):
        found = [m for m in bare_client.messages if "agentls.actions[1]" in m.message]
        if found:
            break
        await asyncio.sleep(0.05)
    (message,) = found
    assert message.type == lsp.MessageType.Error and "'a b'" in message.message


def without_resolve(editor: str) -> lsp.ClientCapabilities:
    capabilities = client_capabilities(editor)
    assert capabilities.text_document is not None
    code_action = capabilities.text_document.code_action
    assert code_action is not None
    capabilities.text_document.code_action = attrs.evolve(code_action, resolve_support=None)
    return capabilities


@pytest.mark.parametrize("editor", CLIENTS)
async def test_without_resolve_the_command_applies_the_edit(
        bare_client: AgentClient, editor: str, project: Path, model: ReplayServer) -> None:
    await initialize(bare_client, without_resolve(editor), project, options_for(model))
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [FIX_CALL]}},
        {"match": {"tool_results": True}, "reply": {"text": "add() now adds."}},
    ]})
    uri = open_calc(bare_client, project, version=4)
    (fix, _explain) = await list_actions(bare_client, uri, rng(1, 12, 1, 12), [WRONG_OPERATOR])
    assert fix.command is not None and fix.command.command == "agentls.runAction"
    assert fix.edit is None

    result = await execute(bare_client, fix.command)

    # The command answers at once; the run goes on and sends its edit (DESIGN.md 13).
    assert result["started"] is True and result["runId"]
    done = await bare_client.wait_for_event(
        lambda e: e["kind"] == "done" and e["runId"] == result["runId"])
    assert done["stopReason"] == "done"
    stored = await until_recorded(bare_client, done["sessionId"])
    assert stored["metadata"]["applied"] is True
    (params,) = bare_client.edits
    assert params.label == "AgentLS: Fix 'add() subtracts' (src/calc.py)"
    document_edit = single_document_edit(params.edit)
    assert document_edit.text_document.version == 4
    assert apply_text_edits(CALC, document_edit.edits) == FIXED
    # The diagnostic travelled in the command's arguments.
    assert "add() subtracts" in last_user_message(model.requests[0].body)
    assert bare_client.open_texts[uri][1] == FIXED


async def until_recorded(client: AgentClient, session_id: str) -> dict[str, Any]:
    """The run's actions message once the one delivery path has recorded the review."""
    for _ in range(200):
        stored = await client.send("agentls/history", {"sessionId": session_id})
        actions = [m for m in stored["messages"] if m["kind"] == "actions"]
        if actions and actions[-1]["metadata"].get("applied") is not None:
            return dict(actions[-1])
        await asyncio.sleep(0.05)
    raise AssertionError("the edit's review was never recorded")


async def test_explain_streams_and_shows_a_markdown_document(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    explanation = "## What it does\n\n`add` subtracts `b` from `a`, despite its name."
    model.load({"steps": [{"reply": {"text": explanation}}]})
    uri = open_calc(client, project)
    explain = titled(await list_actions(client, uri, rng(0, 0, 2, 0)), "AgentLS: Explain")
    assert explain.command is not None and explain.edit is None

    result = await execute(client, explain.command)

    assert result["started"] is True
    await client.wait_for_event(lambda e: e["kind"] == "done" and e["runId"] == result["runId"])
    for _ in range(100):
        if client.shown_documents:
            break
        await asyncio.sleep(0.05)
    (shown,) = client.shown_documents
    assert shown.take_focus
    path = Path(lsp_path(shown.uri))
    assert path.parent == project / ".agentls" / "explain" and path.suffix == ".md"
    assert path.read_text() == f"# Explain: src/calc.py, lines 1-2\n\n{explanation}\n"
    texts = "".join(e["text"] for e in client.events(result["runId"], "text"))
    assert texts == explanation
    body = model.requests[0].body
    assert not {t["function"]["name"] for t in body["tools"]} & {"edit_file", "write_file",
                                                                   "apply_patch"}
    assert client.edits == []


def lsp_path(uri: str) -> str:
    from pygls.uris import to_fs_path

    path = to_fs_path(uri)
    assert path is not None
    return path


async def test_explain_without_show_document_uses_a_message(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    capabilities = client_capabilities("neovim")
    assert capabilities.window is not None
    capabilities.window = attrs.evolve(capabilities.window, show_document=None)
    await initialize(bare_client, capabilities, project, options_for(model))
    model.load({"steps": [{"reply": {"text": "It subtracts."}}]})
    uri = open_calc(bare_client, project)
    explain = titled(await list_actions(bare_client, uri, rng(1, 0, 1, 0)), "AgentLS: Explain")
    assert explain.command is not None

    result = await execute(bare_client, explain.command)

    assert result["started"] is True
    for _ in range(200):
        if any(m.message.endswith("It subtracts.") for m in bare_client.messages):
            break
        await asyncio.sleep(0.05)
    assert bare_client.shown_documents == []
    assert any(m.message.endswith("It subtracts.") for m in bare_client.messages)
    assert "the code around line 2 of src/calc.py" in last_user_message(model.requests[0].body)


async def test_write_tests_may_create_a_test_file(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    test_file = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("write_file", "t1", path="tests/test_calc.py", content=test_file)]}},
        {"match": {"tool_results": True}, "reply": {"text": "Added tests/test_calc.py."}},
    ]})
    uri = open_calc(client, project)
    actions = await list_actions(client, uri, rng(0, 0, 2, 0))

    resolved = await client.code_action_resolve_async(titled(actions, "AgentLS: Write tests"))

    assert resolved.edit is not None
    changes = list(resolved.edit.document_changes or ())
    created = project / "tests" / "test_calc.py"
    assert [c.uri for c in changes if isinstance(c, lsp.CreateFile)] == [created.as_uri()]
    (document_edit,) = [c for c in changes if isinstance(c, lsp.TextDocumentEdit)]
    assert apply_text_edits("", document_edit.edits) == test_file


async def test_a_model_error_gives_no_edit_and_an_error_message(
        client: AgentClient, project: Path, model: ReplayServer) -> None:
    model.load({"steps": [{"error": {"status": 400, "body": {"error": {
        "message": "This model's maximum context length is exceeded", "type": "invalid",
        "param": None, "code": "bad_request"}}}}]})
    uri = open_calc(client, project)
    (fix, _explain) = await list_actions(client, uri, rng(1, 12, 1, 12), [WRONG_OPERATOR])

    resolved = await client.code_action_resolve_async(fix)

    assert resolved.edit is None
    (message,) = [m for m in client.messages if "failed" in m.message]
    assert message.type == lsp.MessageType.Error
    assert message.message.startswith("AgentLS: Fix 'add() subtracts' failed: ")
