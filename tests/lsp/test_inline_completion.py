"""Inline completion end to end: the real server over stdio, a pytest-lsp client with the
recorded capabilities of VS Code and Neovim, the scripted model server (not a real model)
answering /v1/completions."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import AgentClient, initialize, options_for

STEPS: list[dict[str, Any]] = []


def completion_options(model: ReplayServer, **completion: Any) -> dict[str, Any]:
    options = options_for(model)
    options["completion"] = {"model": "scripted-model", "debounce_ms": 0, **completion}
    return options


def open_doc(client: AgentClient, path: Path, text: str, language: str = "python",
             version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id=language, version=version,
                                           text=text)))
    client.open_texts[uri] = (version, text)
    return uri


def change_doc(client: AgentClient, uri: str, text: str) -> None:
    version = client.open_texts[uri][0] + 1
    client.open_texts[uri] = (version, text)
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))


async def ask(client: AgentClient, uri: str, line: int, character: int, *,
              automatic: bool = False,
              selected: lsp.SelectedCompletionInfo | None = None) -> list[str]:
    kind = (lsp.InlineCompletionTriggerKind.Automatic if automatic
            else lsp.InlineCompletionTriggerKind.Invoked)
    result = await asyncio.wait_for(client.text_document_inline_completion_async(
        lsp.InlineCompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=line, character=character),
            context=lsp.InlineCompletionContext(trigger_kind=kind,
                                                selected_completion_info=selected))), 30)
    if result is None:
        return []
    items = result.items if isinstance(result, lsp.InlineCompletionList) else result
    return [item.insert_text if isinstance(item.insert_text, str) else item.insert_text.value
            for item in items]


async def start(client: AgentClient, project: Path, model: ReplayServer, editor: str,
                **completion: Any) -> lsp.InitializeResult:
    return await initialize(client, client_capabilities(editor), project,
                     completion_options(model, **completion))


def completions(model: ReplayServer) -> list[Any]:
    return [r for r in model.requests if r.path == "/v1/completions"]


@pytest.mark.parametrize("editor", ["visual-studio-code", "neovim"])
async def test_fim_with_suffix_and_capability(bare_client: AgentClient, project: Path,
                                              model: ReplayServer, editor: str) -> None:
    model.load({"steps": [{"match": {"prompt": "/def add\\(a, b\\):\\n    $/",
                                     "suffix": "print("},
                           "reply": {"text": "return a + b\n\n\nprint(add(1, 2))"}}]})
    result = await initialize(bare_client, client_capabilities(editor), project,
                              completion_options(model))
    assert result.capabilities.inline_completion_provider is not None
    uri = open_doc(bare_client, project / "src" / "calc.py",
                   "def add(a, b):\n    \n\nprint(add(1, 2))\n")
    assert await ask(bare_client, uri, 1, 4) == ["return a + b"]
    (request,) = completions(model)
    assert request.body["suffix"].startswith("\n\nprint(") and request.body["stream"] is True


class StatusClient:
    """Records agentls/completionStatus notifications on the test client."""

    def __init__(self, client: AgentClient) -> None:
        self.seen: list[dict[str, Any]] = []

        @client.feature("agentls/completionStatus")
        def status(ls: AgentClient, params: Any) -> None:
            self.seen.append({"status": params.status, "message": params.message})


async def test_bad_documents_get_an_empty_answer(bare_client: AgentClient, project: Path,
                                                 model: ReplayServer) -> None:
    model.load({"steps": [{"times": "*", "reply": {"text": "value"}}]})
    (project / ".env").write_text("SECRET=1\n")
    await start(bare_client, project, model, "visual-studio-code",
                disabled_languages=["markdown"])
    # unopened
    assert await ask(bare_client, (project / "src" / "main.py").as_uri(), 0, 0) == []
    # fenced (denied by the fence even though the editor opened it)
    env = open_doc(bare_client, project / ".env", "SECRET=1\n", "dotenv")
    assert await ask(bare_client, env, 0, 7) == []
    # switched off for the language
    readme = open_doc(bare_client, project / "README.md", "# calc\n", "markdown")
    assert await ask(bare_client, readme, 1, 0) == []
    assert completions(model) == []
    # a position past the end of the line and of the file: answered at the end
    uri = open_doc(bare_client, project / "src" / "calc.py", "x = \n")
    assert await ask(bare_client, uri, 0, 99) == ["value"]
    assert await ask(bare_client, uri, 40, 3) == ["value"]
    assert completions(model)[0].body["prompt"] == "x = "


async def test_selected_completion_info_is_applied(bare_client: AgentClient, project: Path,
                                                   model: ReplayServer) -> None:
    model.load({"steps": [{"match": {"prompt": "/items.append$/"}, "reply": {"text": "(x)"}}]})
    await start(bare_client, project, model, "visual-studio-code")
    uri = open_doc(bare_client, project / "src" / "calc.py", "items.ap\n")
    selected = lsp.SelectedCompletionInfo(
        range=lsp.Range(start=lsp.Position(line=0, character=6),
                        end=lsp.Position(line=0, character=8)), text="append")
    result = await bare_client.text_document_inline_completion_async(lsp.InlineCompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        position=lsp.Position(line=0, character=8),
        context=lsp.InlineCompletionContext(trigger_kind=lsp.InlineCompletionTriggerKind.Invoked,
                                            selected_completion_info=selected)))
    assert isinstance(result, lsp.InlineCompletionList)
    (item,) = result.items
    assert item.insert_text == "append(x)"
    assert item.range == selected.range


@pytest.mark.parametrize("editor", ["visual-studio-code", "neovim"])
async def test_multibyte_positions_in_the_negotiated_encoding(
        bare_client: AgentClient, project: Path, model: ReplayServer, editor: str) -> None:
    model.load({"steps": [{"times": "*", "reply": {"text": "done"}}]})
    result = await start(bare_client, project, model, editor)
    encoding = result.capabilities.position_encoding or lsp.PositionEncodingKind.Utf16
    line = "s = '日本🎉' + "
    units = {lsp.PositionEncodingKind.Utf16: len(line.encode("utf-16-le")) // 2,
             lsp.PositionEncodingKind.Utf8: len(line.encode()),
             lsp.PositionEncodingKind.Utf32: len(line)}[lsp.PositionEncodingKind(encoding)]
    uri = open_doc(bare_client, project / "src" / "calc.py", line + "\n")
    assert await ask(bare_client, uri, 0, units) == ["done"]
    assert completions(model)[-1].body["prompt"] == line


async def test_crlf_and_tabs_are_kept(bare_client: AgentClient, project: Path,
                                      model: ReplayServer) -> None:
    model.load({"steps": [{"reply": {"text": "\n    if x:\n        return 1"}}]})
    await start(bare_client, project, model, "neovim")
    text = "def f(x):\r\n\tpass\r\n\r\ndef g(x):"
    uri = open_doc(bare_client, project / "src" / "calc.py", text + "\r\n")
    assert await ask(bare_client, uri, 3, 9) == ["\r\n\tif x:\r\n\t\treturn 1"]
    assert "\r" not in completions(model)[0].body["prompt"]


async def test_a_20_mb_file_sends_windows(bare_client: AgentClient, project: Path,
                                          model: ReplayServer) -> None:
    model.load({"steps": [{"times": "*", "reply": {"text": "1"}}]})
    await start(bare_client, project, model, "visual-studio-code")
    big = "".join(f"value_{i} = {i}\n" for i in range(1_100_000))
    assert len(big) > 20_000_000
    uri = open_doc(bare_client, project / "src" / "big.py", big + "x = ")
    assert await ask(bare_client, uri, 1_100_000, 4) == ["1"]
    sent = completions(model)[0].body
    assert sent["prompt"].endswith("value_1099999 = 1099999\nx = ")
    assert len(sent["prompt"]) + len(sent["suffix"]) < 10_000


async def test_status_off_then_error_once_when_the_model_is_down(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    statuses = StatusClient(bare_client)
    options = completion_options(model)
    options["completion"]["backend"] = "down"
    options["backends"]["down"] = {"base_url": "http://127.0.0.1:9/v1", "model": "m",
                                   "api_key_env": None}
    await initialize(bare_client, client_capabilities("neovim"), project, options)
    uri = open_doc(bare_client, project / "src" / "calc.py", "x = \n")
    for n in range(4):
        assert await ask(bare_client, uri, 0, 4 - n % 2) == []
    # "waiting" shows when the refused connection itself takes over 0.15 s (a loaded machine)
    shown = [s["status"] for s in statuses.seen if s["status"] != "waiting"]
    assert shown == ["idle", "error"]
    assert statuses.seen[-1]["status"] == "error"
    assert "cannot reach" in statuses.seen[-1]["message"]


async def test_off_without_a_completion_model(bare_client: AgentClient, project: Path,
                                              model: ReplayServer) -> None:
    statuses = StatusClient(bare_client)
    await initialize(bare_client, client_capabilities("neovim"), project, options_for(model))
    uri = open_doc(bare_client, project / "src" / "calc.py", "x = \n")
    assert await ask(bare_client, uri, 0, 4) == []
    assert statuses.seen == [{"status": "off", "message": ""}]
    assert model.requests == []


async def test_thirty_keystrokes_a_second_for_ten_seconds(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    model.load({"steps": [{"times": "*", "reply": {"text": "total + 1", "chunk_size": 1,
                                                   "delay_s": 0.01}}]})
    await start(bare_client, project, model, "visual-studio-code", debounce_ms=30)
    text = "def f(total):\n    return "
    uri = open_doc(bare_client, project / "src" / "calc.py", text)
    pending = []
    for _ in range(300):
        text += "t"
        change_doc(bare_client, uri, text)
        pending.append(asyncio.ensure_future(ask(bare_client, uri, 1, len(text) - 14,
                                                 automatic=True)))
        await asyncio.sleep(1 / 30)
    # every request answered (no queue left behind), the last one with the completion
    results = await asyncio.wait_for(asyncio.gather(*pending), 30)
    assert results[-1] == ["total + 1"]
    assert model.most_in_flight() == 1
    assert len(completions(model)) < 300  # superseded within the debounce: no model call


async def test_switched_off_by_a_configuration_change(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    model.load({"steps": [{"times": "*", "reply": {"text": "value"}}]})
    statuses = StatusClient(bare_client)
    options = completion_options(model)
    await initialize(bare_client, client_capabilities("visual-studio-code"), project, options)
    uri = open_doc(bare_client, project / "src" / "calc.py", "x = \n")
    assert await ask(bare_client, uri, 0, 4) == ["value"]
    # what the editors' toggles do: completion.enabled = false, pushed
    bare_client.set_configuration({**options, "completion": {**options["completion"],
                                                             "enabled": False}},
                                  section="agentls")
    bare_client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings=None))
    for _ in range(200):
        if statuses.seen and statuses.seen[-1]["status"] == "off":
            break
        await asyncio.sleep(0.05)
    assert [s["status"] for s in statuses.seen] == ["idle", "off"]
    asked = len(completions(model))
    assert await ask(bare_client, uri, 0, 3) == []
    assert len(completions(model)) == asked
