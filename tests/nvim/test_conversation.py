"""The conversation in real Neovim (issue 29): mentions completed through the built-in
completion and shown as chips, :AgentChat toggling from any window, no text after a cancel,
a reopened session rendered as it happened (from agentls/turns), the model in the winbar,
and :checkhealth for the backend set in setup()."""

from __future__ import annotations

from pathlib import Path

from agentls.devtools.replay.command import ReplayServer
from tests.nvim.conftest import Editor
from tests.nvim.test_chat_buffer import chat_text, health, running

CHAT_WINS = "return vim.fn.win_findbuf(require('agentls.chat').state().bufnr or -1)"


def chat_windows(editor: Editor) -> list[int]:
    return list(editor.lua(CHAT_WINS))


def current_win(editor: Editor) -> int:
    return int(editor.lua("return vim.api.nvim_get_current_win()"))


def test_file_and_buffer_mentions_complete_and_are_chips_on_the_turn(
        editor: Editor, model: ReplayServer) -> None:
    model.load({"steps": [{"reply": {"text": "It subtracts."}, "times": "*"}]})
    editor.open("src/calc.py")
    editor.nvim.command("AgentChat")
    editor.nvim.command("normal! G")

    editor.nvim.input("ccWhy? #file:ca<C-x><C-o>")
    editor.wait("the file completed", lambda: "#file:src/calc.py" in editor.lua(
        "return vim.api.nvim_get_current_line()"))
    editor.nvim.input(" #buf<C-x><C-o>")
    editor.wait("#buffer completed", lambda: "#buffer" in editor.lua(
        "return vim.api.nvim_get_current_line()"))
    editor.nvim.input("<Esc>")
    line = editor.lua("return vim.api.nvim_get_current_line()")
    assert line == "Why? #file:src/calc.py #buffer", line
    editor.nvim.input("<C-s>")

    editor.wait("the answer", lambda: "It subtracts." in chat_text(editor)
                and not running(editor))
    text = chat_text(editor)
    assert "> 📎 file `src/calc.py` 2 lines, 32 B" in text
    assert "> 📎 buffer `src/calc.py` 2 lines, 32 B" in text
    sent = model.requests[-1].body["messages"][-1]["content"]
    assert "## File: src/calc.py" in sent and "return a - b" in sent
    winbar = editor.lua("return vim.wo[vim.fn.win_findbuf(require('agentls.chat')"
                        ".state().bufnr)[1]].winbar")
    assert "model: scripted-model" in winbar and "mode: agent" in winbar
    assert editor.lua("return require('agentls.chat').statusline()") == \
        "scripted-model · agent"
    editor.capture("chat-mentions")


def test_agentchat_toggles_from_another_window_and_q_closes(editor: Editor) -> None:
    editor.open("src/calc.py")
    source = current_win(editor)

    editor.nvim.command("AgentChat")  # open
    [chat] = chat_windows(editor)
    assert current_win(editor) == chat
    editor.nvim.command("wincmd p")
    assert current_win(editor) == source

    editor.nvim.command("AgentChat")  # from another window: go to it
    assert chat_windows(editor) == [chat] and current_win(editor) == chat
    editor.nvim.command("AgentChat")  # in it: close it
    assert chat_windows(editor) == [] and current_win(editor) == source

    editor.nvim.command("AgentChat")  # open again, then q closes it
    assert len(chat_windows(editor)) == 1
    editor.nvim.input("q")
    editor.wait("q to close the chat", lambda: chat_windows(editor) == [])


def test_text_streamed_after_a_cancel_is_dropped(editor: Editor, model: ReplayServer) -> None:
    model.load({"steps": [{"reply": {"text": "word " * 400, "chunk_size": 5,
                                     "delay_s": 0.03}}]})
    editor.open("src/calc.py")
    editor.nvim.command("AgentChat tell me a long story")
    editor.wait("the first words", lambda: "word" in chat_text(editor))

    editor.nvim.command("AgentCancel")
    editor.wait("the run to stop", lambda: not running(editor), timeout=10)

    text = chat_text(editor)
    after = text.split("_cancelling…_", 1)[1]
    assert "word" not in after, after
    assert "stopped: cancelled" in after


def test_a_reopened_session_reads_as_it_happened(editor: Editor, model: ReplayServer) -> None:
    model.load({"steps": [
        {"match": {"user": "look", "tool_results": False},
         "reply": {"text": "Let me read it.", "tool_calls": [
             {"id": "c1", "name": "read_file", "arguments": {"path": "src/calc.py"}}]}},
        {"match": {"tool_results": True}, "reply": {"text": "It subtracts."}},
        {"reply": {"text": "You are welcome."}},
    ]})
    editor.open("src/calc.py")
    editor.nvim.command("AgentChat look at #file:src/calc.py")
    editor.wait("the first answer", lambda: "It subtracts." in chat_text(editor)
                and not running(editor))
    editor.lua("local s = require('agentls.chat').state()"
               " vim.api.nvim_buf_set_lines(s.bufnr, -2, -1, false, {'thanks'})")
    editor.nvim.command("AgentSend")
    editor.wait("the second answer", lambda: "You are welcome." in chat_text(editor)
                and not running(editor))
    live = chat_text(editor)
    editor.capture("chat-live")

    editor.lua("vim.api.nvim_buf_delete(require('agentls.chat').state().bufnr, {force = true})")
    editor.lua("_G.agentls_test_choice = 'look at'")
    editor.nvim.command("AgentSessions")
    editor.wait("the history", lambda: editor.lua(
        "local s = require('agentls.chat').state()"
        " return s.bufnr ~= nil and vim.api.nvim_buf_is_valid(s.bufnr)")
        and "You are welcome." in chat_text(editor))
    reopened = chat_text(editor)
    editor.capture("chat-reopened")

    assert reopened.count("## You") == 2 and reopened.count("## AgentLS") == 2
    assert "> ⚙ read_file {{{" in reopened and "> ✓ ok (path: src/calc.py) }}}" in reopened
    assert "> 📎 file `src/calc.py`" in reopened
    assert reopened == live  # line for line, blank lines too


def test_checkhealth_checks_the_backend_set_in_setup(editor: Editor) -> None:
    editor.open("src/calc.py")
    report = health(editor)
    assert "ERROR" not in report, report
    assert "OK backend scripted (openai, model scripted-model" in report
    assert "OPENAI_API_KEY" not in report  # the scripted backend needs no key


def test_checkhealth_prints_the_failing_row_and_its_fix(editor: Editor, project: Path) -> None:
    editor.open("src/calc.py")
    editor.lua("local o = require('agentls.config').options"
               " o.settings.backends.scripted.base_url = 'http://127.0.0.1:9/v1'")
    report = health(editor)
    assert "ERROR backend scripted (openai, model scripted-model, http://127.0.0.1:9/v1): " \
           "unreachable" in report, report
    assert "agentls config set backends.scripted.base_url" in report


def test_mentions_in_a_prompt_become_references(editor: Editor) -> None:
    bufnr = editor.open("src/calc.py")
    refs = editor.lua("return require('agentls.mentions').references(...)",
                      "see @https://x.example/a and @parse_config. #changes #file:src/calc.py."
                      " #buffer mail@example.com", bufnr)
    assert [(r["kind"], r.get("name") or r.get("url") or r.get("path") or r.get("uri"))
            for r in refs] == [
        ("changes", None), ("file", "src/calc.py"),
        ("buffer", (editor.root / "src" / "calc.py").as_uri()),
        ("url", "https://x.example/a"), ("symbol", "parse_config")]


def test_a_long_session_opens_on_its_latest_page_and_cr_shows_the_earlier_turns(
        editor: Editor) -> None:
    from bench.bench_history import build_session

    session_id = build_session(editor.root, 130)
    editor.open("src/calc.py")
    editor.lua("_G.agentls_done = nil require('agentls.chat').open_session(..., "
               "function(n) _G.agentls_done = n end)", session_id)
    assert editor.wait("the history", lambda: editor.lua("return _G.agentls_done")) == 100
    text = chat_text(editor)
    assert text.count("## You") == 100 and "Question 129:" in text and "Question 29:" not in text
    assert text.startswith("# AgentLS chat\n_(30 earlier turns: <CR> on this line shows 30 more)_"
                           "\n\n## You\n\nQuestion 30:")

    editor.nvim.command("normal! gg")
    editor.nvim.command("normal! j")
    editor.nvim.input("<CR>")
    editor.wait("the earlier turns", lambda: chat_text(editor).count("## You") == 130)
    text = chat_text(editor)
    assert text.startswith("# AgentLS chat\n\n## You\n\nQuestion 0:")
    assert "earlier turns" not in text
    assert "Question 29:" in text and text.index("Question 29:") < text.index("Question 30:")
    tool_lines = editor.lua(
        "local s = require('agentls.chat').state() local out = {}"
        " local ns = vim.api.nvim_get_namespaces().agentls_chat"
        " for _, m in ipairs(vim.api.nvim_buf_get_extmarks(s.bufnr, ns, 0, -1, {})) do"
        "   table.insert(out, vim.api.nvim_buf_get_lines(s.bufnr, m[2], m[2] + 1, false)[1])"
        " end return out")
    assert len(tool_lines) == 3 * 130 and all(line.startswith("> ") for line in tool_lines)
