"""The chat buffer in real Neovim: streamed as it arrives, cancellable; files the agent
creates are byte-identical; a delete is previewed, not silently done; :checkhealth."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentls.devtools.replay.command import ReplayServer
from agentls.engine.sessions.store import SessionStore
from agentls.llm.messages import Message
from agentls.settings import trust as workspace_trust
from tests.lsp.conftest import call, options_for
from tests.nvim.conftest import Editor, start_editor

CHAT_STATE = "local s = require('agentls.chat').state() return {run = s.run, session = s.session}"


def chat_text(editor: Editor) -> str:
    return str(editor.lua("local s = require('agentls.chat').state()"
                          " return table.concat(vim.api.nvim_buf_get_lines(s.bufnr, 0, -1, false),"
                          " '\\n')"))


def running(editor: Editor) -> bool:
    return bool(editor.lua(CHAT_STATE).get("run"))


def test_agentchat_streams_before_the_run_ends(editor: Editor, model: ReplayServer) -> None:
    answer = "The add function subtracts; it should add. " * 4
    model.load({"steps": [{"reply": {"text": answer, "chunk_size": 6, "delay_s": 0.05}}]})
    editor.open("src/calc.py")

    editor.nvim.command("AgentChat what does add do?")

    seen = editor.wait("the first words", lambda: "The add" in chat_text(editor))
    assert seen and running(editor), "text appeared only after the run ended"
    editor.wait("the run to end", lambda: not running(editor))
    text = chat_text(editor)
    assert "## You\n\nwhat does add do?" in text and answer.strip() in text
    screen = editor.capture("chat")
    assert "ft=markdown" in screen and "prompt (<C-s> send, <C-c> cancel)" in screen


def test_agentcancel_stops_the_stream(editor: Editor, model: ReplayServer) -> None:
    long = "word " * 400
    model.load({"steps": [{"reply": {"text": long, "chunk_size": 5, "delay_s": 0.05}}]})
    editor.open("src/calc.py")
    editor.nvim.command("AgentChat tell me a long story")
    editor.wait("the first words", lambda: "word" in chat_text(editor))

    editor.nvim.command("AgentCancel")

    editor.wait("the run to stop", lambda: not running(editor), timeout=10)
    text = chat_text(editor)
    assert "stopped: cancelled" in text
    assert text.count("word") < 400


def test_the_prompt_area_is_sent_with_the_key_and_keeps_the_session(
        editor: Editor, model: ReplayServer) -> None:
    model.load({"steps": [{"reply": {"text": "First."}}, {"reply": {"text": "Second."}}]})
    editor.open("src/calc.py")
    editor.nvim.command("AgentChat hello")
    editor.wait("the first answer", lambda: "First." in chat_text(editor)
                and not running(editor))
    session = editor.lua(CHAT_STATE)["session"]
    editor.lua("local s = require('agentls.chat').state()"
               " vim.api.nvim_buf_set_lines(s.bufnr, -2, -1, false, {'and again'})")
    editor.nvim.input("<C-s>")
    editor.wait("the second answer", lambda: "Second." in chat_text(editor))
    assert "## You\n\nand again" in chat_text(editor)
    assert editor.lua(CHAT_STATE)["session"] == session


@pytest.mark.parametrize("content", ["print('new')\n", "no final newline", "a\n\n\nb\n"])
def test_a_created_file_is_byte_identical(editor: Editor, model: ReplayServer,
                                          project: Path, content: str) -> None:
    model.load({"steps": [
        {"match": {"tool_results": False},
         "reply": {"tool_calls": [call("write_file", "w1", path="src/new.py", content=content)]}},
        {"match": {"tool_results": True}, "reply": {"text": "Created."}},
    ]})
    editor.open("src/calc.py")
    editor.nvim.command("AgentChat create src/new.py")
    editor.wait("the preview", lambda: editor.lua("return require('agentls.preview').waiting()"))
    assert "src/new.py (created)" in editor.screen()
    assert not (project / "src" / "new.py").exists()

    editor.nvim.command("AgentApply")

    editor.wait("the run to end", lambda: not running(editor))
    assert (project / "src" / "new.py").read_bytes() == content.encode()
    assert "edit applied" in chat_text(editor)


def test_a_delete_is_previewed_not_silently_done(editor: Editor, model: ReplayServer,
                                                 project: Path) -> None:
    model.load({"steps": [
        {"match": {"tool_results": False},
         "reply": {"tool_calls": [call("delete_file", "d1", path="README.md")]}},
        {"match": {"tool_results": True}, "reply": {"text": "Deleted."}},
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("delete_file", "d2", path="README.md")]}},
        {"match": {"tool_results": True}, "reply": {"text": "Deleted."}},
    ]})
    editor.open("src/calc.py")
    editor.nvim.command("AgentChat delete the readme")
    editor.wait("the preview", lambda: editor.lua("return require('agentls.preview').waiting()"))
    screen = editor.capture("preview-delete")
    assert "README.md (deleted, 1 line): pending" in screen
    assert editor.lua("return require('agentls.review').state().files[1].kind") == "delete"
    assert (project / "README.md").exists()
    editor.nvim.command("AgentReject")
    editor.wait("the run to end", lambda: not running(editor))
    assert (project / "README.md").read_text() == "# calc\n"
    assert "rejected deleted README.md" in chat_text(editor)

    editor.nvim.command("AgentChat delete the readme")
    editor.wait("the preview", lambda: editor.lua("return require('agentls.preview').waiting()"))
    editor.nvim.command("AgentApply")
    editor.wait("the file to go", lambda: not (project / "README.md").exists())


def health(editor: Editor) -> str:
    editor.nvim.command("checkhealth agentls")
    return "\n".join(editor.lines(editor.lua("return vim.api.nvim_get_current_buf()")))


def test_checkhealth_with_a_running_server(editor: Editor, model: ReplayServer,
                                           project: Path) -> None:
    # `agentls backends` reads the project's settings, like the server does.
    (project / ".agentls").mkdir()
    (project / ".agentls" / "config.toml").write_text(
        'backend = "scripted"\n[backends.scripted]\n'
        f'base_url = "{model.base_url}"\nmodel = "scripted-model"\napi_key_env = ""\n')
    # A project's base_url counts once its person trusts it (`agentls trust`, docs/SECURITY.md).
    workspace_trust.trust(project, project / ".agentls" / "config.toml")
    editor.open("src/calc.py")
    report = health(editor)
    assert "OK Neovim 0.11" in report
    assert "OK server command" in report and "agentls" in report
    # Reachable, or the exit code and what `agentls backends` said (probes time out at
    # 1.4 s, which a loaded test machine can miss): either way a line about the backend.
    assert re.search(r"OK backend scripted \(openai|ERROR backend scripted \(openai", report)
    assert "server running" in report
    assert "OPENAI_API_KEY" not in report  # the scripted backend needs no key


def test_checkhealth_without_a_server(tmp_path: Path, project: Path,
                                      model: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value")
    missing = str(tmp_path / "no-such-agentls")
    editor = start_editor(tmp_path, project, options_for(model), cmd=[missing, "serve"])
    try:
        report = health(editor)
    finally:
        editor.nvim.close()
    assert f"ERROR server command not found: {missing}" in report
    assert "pipx install agentls" in report
    assert "sk-test-secret-value" not in report


def test_agentsessions_reopens_a_session_and_agentask_sends_the_selection(
        editor: Editor, model: ReplayServer) -> None:
    model.load({"steps": [{"reply": {"text": "Remembered answer."}},
                          {"reply": {"text": "It subtracts."}}]})
    editor.open("src/calc.py")
    editor.nvim.command("AgentChat remember this")
    editor.wait("the answer", lambda: "Remembered answer." in chat_text(editor)
                and not running(editor))
    # A later turn the model was told a note with (as the server stores it: a field).
    session_id = editor.lua("return require('agentls.chat').state().session")
    store = SessionStore.for_workspace(editor.root)
    store.append(session_id, Message.user("and now?"),
                 metadata={"notes": ["the person rejected your changes to src/calc.py"]})
    store.close()
    editor.lua("vim.api.nvim_buf_delete(require('agentls.chat').state().bufnr, {force = true})")
    editor.nvim.command("wincmd p")
    editor.lua("_G.agentls_test_choice = 'remember this'")

    editor.nvim.command("AgentSessions")

    editor.wait("the history", lambda: editor.lua(
        "local s = require('agentls.chat').state()"
        " return s.bufnr and vim.api.nvim_buf_is_valid(s.bufnr)")
        and "Remembered answer." in chat_text(editor))
    shown = chat_text(editor)
    assert "## You\n\nand now?\n" in shown  # the person's words, without the note
    assert "_AgentLS note: the person rejected your changes to src/calc.py_" in shown
    editor.nvim.command("wincmd p")
    editor.nvim.command("1,2AgentAsk what does this do?")
    editor.wait("the answer", lambda: "It subtracts." in chat_text(editor))
    body = model.requests[-1].body
    assert "return a - b" in str(body["messages"])
