"""Next-edit suggestions end to end: the real server over stdio, a pytest-lsp client, the
scripted model server (not a real model) answering /v1/completions in Zeta's format (its
``rewrite`` replies rewrite the prompt's editable region)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from agentls.engine.next_edit.region import excerpt
from agentls.sandbox.bwrap import probe
from tests.lsp.conftest import AgentClient, apply_text_edits, initialize, options_for
from tests.lsp.test_inline_completion import change_doc, open_doc

SOURCE = ("def scale(values, count):\n"
          "    out = []\n"
          "    for value in values:\n"
          "        out.append(value * count)\n"
          "    return out, count\n")
RENAMED = SOURCE.replace("values, count", "values, total")


def next_edit_options(model: ReplayServer, **next_edit: Any) -> dict[str, Any]:
    options = options_for(model)
    options["next_edit"] = {"model": "scripted-model", "format": "zeta", "debounce_ms": 0,
                            **next_edit}
    return options


async def start(client: AgentClient, project: Path, model: ReplayServer,
                editor: str = "neovim", **next_edit: Any) -> None:
    await initialize(client, client_capabilities(editor), project,
                     next_edit_options(model, **next_edit))


async def ask(client: AgentClient, uri: str, line: int, character: int,
              version: int | None = None, method: str = "textDocument/copilotInlineEdit"
              ) -> list[dict[str, Any]]:
    """The request as copilot-lsp sends it: position params with the buffer's version."""
    if version is None:
        version = client.open_texts[uri][0]
    result = await asyncio.wait_for(client.send(method, {
        "textDocument": {"uri": uri, "version": version},
        "position": {"line": line, "character": character}}), 30)
    edits: list[dict[str, Any]] = result["edits"]
    return edits


def completions(model: ReplayServer) -> list[Any]:
    return [r for r in model.requests if r.path == "/v1/completions"]


def accept(client: AgentClient, uri: str, edit: dict[str, Any]) -> None:
    """What an editor does on accept: apply the edit, then run its command."""
    text = apply_text_edits(client.open_texts[uri][1], [lsp.TextEdit(
        range=lsp.Range(start=lsp.Position(**edit["range"]["start"]),
                        end=lsp.Position(**edit["range"]["end"])),
        new_text=edit["text"])])
    change_doc(client, uri, text)
    client.workspace_execute_command(lsp.ExecuteCommandParams(
        command=edit["command"]["command"], arguments=edit["command"]["arguments"]))


async def test_a_rename_spreads_to_the_next_use(bare_client: AgentClient, project: Path,
                                                model: ReplayServer) -> None:
    model.load({"steps": [{"times": "*", "reply": {"rewrite": [["count", "total"]]}}]})
    await start(bare_client, project, model)
    uri = open_doc(bare_client, project / "src" / "scale.py", SOURCE)
    change_doc(bare_client, uri, RENAMED)  # the person renamed the parameter
    (edit,) = await ask(bare_client, uri, 0, 22)
    # the suggestion lands on the next use, not on the line just typed
    assert edit["range"] == {"start": {"line": 3, "character": 27},
                             "end": {"line": 3, "character": 32}}
    assert edit["text"] == "total"
    assert edit["textDocument"] == {"uri": uri, "version": 2}
    assert edit["command"]["command"] == "agentls.nextEdit.accept"
    (request,) = completions(model)
    prompt = request.body["prompt"]
    assert "User edited src/scale.py:\n```diff\n" in prompt
    assert "-def scale(values, count):\n+def scale(values, total):" in prompt
    assert "<|editable_region_start|>\n" in prompt and "<|user_cursor_is_here|>" in prompt
    assert prompt.startswith("### Instruction:") and prompt.endswith("### Response:\n")
    bare_client.protocol.notify("textDocument/didShowInlineEdit",
                                {"item": {"command": edit["command"]}})
    accept(bare_client, uri, edit)
    # the next use comes from the same rewrite: no second model request
    (second,) = await ask(bare_client, uri, 3, 32)
    assert second["range"]["start"] == {"line": 4, "character": 16}
    assert second["text"] == "total"
    assert len(completions(model)) == 1
    accept(bare_client, uri, second)
    assert bare_client.open_texts[uri][1] == SOURCE.replace("count", "total")
    # all of the rewrite is in: the model is asked again and has nothing more
    assert await ask(bare_client, uri, 4, 21) == []
    assert len(completions(model)) == 2


async def test_a_stale_version_is_dropped(bare_client: AgentClient, project: Path,
                                          model: ReplayServer) -> None:
    model.load({"steps": [{"times": "*", "reply": {"rewrite": [["count", "total"]]}}]})
    await start(bare_client, project, model)
    uri = open_doc(bare_client, project / "src" / "scale.py", SOURCE)
    change_doc(bare_client, uri, RENAMED)
    assert await ask(bare_client, uri, 0, 22, version=1) == []  # the editor's older version
    assert completions(model) == []
    assert len(await ask(bare_client, uri, 0, 22, version=2)) == 1


async def test_a_keystroke_closes_the_older_model_stream(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    model.load({"steps": [{"times": "*", "reply": {"rewrite": [["count", "total"]],
                                                   "chunk_size": 4, "delay_s": 0.2}}]})
    # Slow enough (about 8 s whole) that on a loaded machine the keystroke still comes mid-stream.
    await start(bare_client, project, model)
    uri = open_doc(bare_client, project / "src" / "scale.py", SOURCE)
    change_doc(bare_client, uri, RENAMED)
    pending = asyncio.ensure_future(ask(bare_client, uri, 0, 22))
    for _ in range(3000):  # a safety net for a loaded machine
        if model.in_flight() == 1:
            break
        await asyncio.sleep(0.01)
    assert model.in_flight() == 1
    change_doc(bare_client, uri, RENAMED + "\n")  # the next keystroke
    assert await asyncio.wait_for(pending, 30) == []  # its answer would be stale: none
    for _ in range(3000):
        if model.closed_streams:
            break
        await asyncio.sleep(0.01)
    assert len(model.closed_streams) == 1
    assert model.in_flight() == 0


async def test_a_suggestion_outside_the_region_is_refused(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    text = "".join(f"value_{i} = {i}\n" for i in range(40))
    cursor = text.index("value_21 = 21") + 5
    cut = excerpt(text, cursor, 32, 64)  # what the server cuts with these budgets
    above = cut.above.splitlines()
    assert cut.first_line == 21 - (cut.region[:cursor - cut.start].count("\n")) and above
    changed_above = "\n".join([*above[:-1], above[-1] + "00"])
    outside = (f"```src/values.py\n{changed_above}\n<|editable_region_start|>\n"
               f"{cut.region}\n<|editable_region_end|>\n```")
    inside = (f"```src/values.py\n{cut.above}<|editable_region_start|>\n"
              f"{cut.region.replace('value_21 = 21', 'value_21 = 2100')}"
              "\n<|editable_region_end|>\n```")
    model.load({"steps": [{"reply": {"text": outside}}, {"reply": {"text": inside}}]})
    await start(bare_client, project, model, region_tokens=32, context_tokens=64)
    uri = open_doc(bare_client, project / "src" / "values.py", text)
    assert await ask(bare_client, uri, 21, 5) == []  # it changed a line above: refused
    (edit,) = await ask(bare_client, uri, 21, 5)  # the same region, rewritten inside
    assert edit["text"] == "00" and edit["range"]["start"] == {"line": 21, "character": 13}
    prompt = completions(model)[0].body["prompt"]
    assert f"{cut.above}<|editable_region_start|>\n" in prompt
    assert "value<|user_cursor_is_here|>_21 = 21" in prompt


async def test_fenced_and_unopened_files_get_no_suggestion(
        bare_client: AgentClient, project: Path, model: ReplayServer) -> None:
    model.load({"steps": [{"times": "*", "reply": {"rewrite": [["1", "2"]]}}]})
    await start(bare_client, project, model)
    env = open_doc(bare_client, project / ".env", "SECRET=1\n", "dotenv")
    change_doc(bare_client, env, "SECRET=11\n")
    assert await ask(bare_client, env, 0, 8) == []
    assert await ask(bare_client, (project / "src" / "main.py").as_uri(), 0, 0, version=1) == []
    assert completions(model) == []


async def test_agentls_next_edit_and_the_chat_prompt(bare_client: AgentClient, project: Path,
                                                     model: ReplayServer) -> None:
    model.load({"steps": [{"times": "*", "reply": {"rewrite": [["count", "total"]]}}]})
    await start(bare_client, project, model, "visual-studio-code", format="chat")
    uri = open_doc(bare_client, project / "src" / "scale.py", SOURCE)
    change_doc(bare_client, uri, RENAMED)
    (edit,) = await ask(bare_client, uri, 0, 22, method="agentls/nextEdit")
    assert edit["range"]["start"] == {"line": 3, "character": 27}
    (request,) = [r for r in model.requests if r.path == "/v1/chat/completions"]
    system, user = request.body["messages"]
    assert "<|editable_region_start|>" in system["content"]
    assert "Recent edits:" in user["content"] and "<|user_cursor_is_here|>" in user["content"]
    # turned down: not offered again; the same rename on another line is another suggestion
    await bare_client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="agentls.nextEdit.reject", arguments=edit["command"]["arguments"]))
    (other,) = await ask(bare_client, uri, 0, 22, method="agentls/nextEdit")
    assert other["range"]["start"] == {"line": 4, "character": 16}
    assert len([r for r in model.requests if r.path == "/v1/chat/completions"]) == 2


async def test_off_without_a_model(bare_client: AgentClient, project: Path,
                                   model: ReplayServer) -> None:
    await initialize(bare_client, client_capabilities("neovim"), project, options_for(model))
    uri = open_doc(bare_client, project / "src" / "scale.py", SOURCE)
    assert await ask(bare_client, uri, 0, 0) == []
    assert model.requests == []


PYRIGHT = os.path.join(os.path.dirname(sys.executable), "basedpyright-langserver")


@pytest.mark.skipif(not probe().available, reason="no sandbox here (the language servers' home)")
async def test_the_chat_prompt_quotes_definitions_from_the_agents_language_servers(
        bare_client: AgentClient, model: ReplayServer, tmp_path: Path) -> None:
    if not os.access(PYRIGHT, os.X_OK):
        pytest.skip("basedpyright is not installed (the dev extra has it)")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (root / "lib.py").write_text('def area(width: float, height: float) -> float:\n'
                                 '    """The rectangle\'s area."""\n'
                                 '    return width * height\n')
    model.load({"steps": [{"times": "*", "reply": {"rewrite": [["size", "surface"]]}}]})
    options = options_for(model, detect=False, servers={"basedpyright": {
        "command": PYRIGHT, "startup_timeout_s": 60}})
    options["next_edit"] = {"model": "scripted-model", "format": "chat", "debounce_ms": 0}
    await initialize(bare_client, client_capabilities("visual-studio-code"), root, options)
    text = "from lib import area\n\nsize = area(2, 3)\nprint(size)\n"
    uri = open_doc(bare_client, root / "app.py", text)
    change_doc(bare_client, uri, text.replace("size = area", "surface = area"))

    def quoted() -> bool:
        chats = [r for r in model.requests if r.path == "/v1/chat/completions"]
        return bool(chats) and "def area(width: float, height: float) -> float:" in (
            chats[-1].body["messages"][-1]["content"])

    for _ in range(120):  # the servers start in the sandbox between requests
        await ask(bare_client, uri, 2, 10, method="agentls/nextEdit")
        if quoted():
            break
        await asyncio.sleep(0.5)
    assert quoted()
    user = [r for r in model.requests if r.path == "/v1/chat/completions"][-1].body[
        "messages"][-1]["content"]
    assert "Related definitions:\nlib.py:1 (area):\ndef area(" in user
