"""Edits in real Neovim with `review = "float"`: every AgentLS edit is previewed as one diff
and applied only when the person says so; the server hears the truth. (The default inline
review is tested in test_review.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import call
from tests.nvim.conftest import Editor


@pytest.fixture(autouse=True)
def float_review(editor: Editor) -> None:
    editor.lua("require('agentls.config').options.review = 'float'")

CALC = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
FIX = call("edit_file", "e1", path="src/calc.py",
           edits=[{"search": "return a - b", "replace": "return a + b"}])

RUN_FIX = """
local bufnr = ...
vim.api.nvim_win_set_cursor(0, {2, 11})
local diagnostic = { range = { start = { line = 1, character = 11 },
                               ["end"] = { line = 1, character = 16 } },
  message = "add() subtracts", severity = 1, source = "review" }
_G.action_result = nil
local client = vim.lsp.get_clients({ name = "agentls", bufnr = bufnr })[1]
local params = vim.lsp.util.make_range_params(0, client.offset_encoding)
params.context = { diagnostics = { diagnostic }, only = { "quickfix" } }
local res = client:request_sync("textDocument/codeAction", params, 10000, bufnr)
for _, action in ipairs(res.result or {}) do
  if action.title:find("Fix", 1, true) then
    _G.listed = action
    client:request("workspace/executeCommand", action.command, function(err, result)
      _G.action_result = err and { error = err.message } or result
    end, bufnr)
    return action.title
  end
end
return vim.inspect(res)
"""


def run_fix(editor: Editor, bufnr: int) -> str:
    title: str = editor.lua(RUN_FIX, bufnr)
    assert title.startswith("AgentLS: Fix"), title
    return title


def wait_preview(editor: Editor) -> str:
    editor.wait("the edit preview", lambda: editor.lua(
        "return require('agentls.preview').waiting()"))
    return editor.screen()


RECORD = """
local c = require('agentls').client()
local sessions = c:request_sync('agentls/sessions', {limit = 10}, 10000).result.sessions
for s = #sessions, 1, -1 do -- the oldest first: the action's own run, not a retry's
  local history = c:request_sync('agentls/history', {sessionId = sessions[s].id}, 10000).result
  for _, m in ipairs(history.messages) do
    if m.kind == 'actions' and m.metadata and m.metadata.applied ~= nil then
      return {applied = m.metadata.applied, failureReason = m.metadata.failure_reason}
    end
  end
end
"""


def action_result(editor: Editor) -> dict:
    """The command answers at once (a run id); the outcome is what the server recorded."""
    started = editor.wait("the command's answer", lambda: editor.lua("return _G.action_result"))
    assert started.get("started") is True, started
    return editor.wait("the action's recorded outcome", lambda: editor.lua(RECORD))


def test_a_code_action_is_previewed_then_applied(editor: Editor, model: ReplayServer,
                                                 project: Path) -> None:
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [FIX]}},
        {"match": {"tool_results": True}, "reply": {"text": "add() now adds."}},
    ]})
    bufnr = editor.open("src/calc.py")
    run_fix(editor, bufnr)

    screen = wait_preview(editor)
    editor.capture("preview")
    assert "ft=diff" in screen and "float" in screen
    assert "diff --agentls src/calc.py (changed)" in screen
    assert "-    return a - b" in screen and "+    return a + b" in screen
    assert (project / "src" / "calc.py").read_text() == CALC  # nothing before the answer

    editor.nvim.command("AgentApply")
    result = action_result(editor)

    assert result["applied"] is True
    assert editor.lines(bufnr) == FIXED.splitlines()
    assert (project / "src" / "calc.py").read_text() == FIXED


def test_a_rejected_edit_changes_nothing_and_the_run_says_so(
        editor: Editor, model: ReplayServer, project: Path) -> None:
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [FIX]}},
        {"match": {"tool_results": True}, "reply": {"text": "add() now adds."}},
    ]})
    bufnr = editor.open("src/calc.py")
    run_fix(editor, bufnr)
    wait_preview(editor)

    editor.nvim.command("AgentReject")
    result = action_result(editor)

    assert result["applied"] is False and result["failureReason"] == "rejected in the preview"
    assert editor.lines(bufnr) == CALC.splitlines()
    assert (project / "src" / "calc.py").read_text() == CALC


def test_typing_while_the_preview_is_open_applies_nothing_and_retry_works(
        editor: Editor, model: ReplayServer, project: Path) -> None:
    model.load({"steps": [
        {"match": {"tool_results": False}, "times": 2, "reply": {"tool_calls": [FIX]}},
        {"match": {"tool_results": True}, "times": 2, "reply": {"text": "add() now adds."}},
    ]})
    bufnr = editor.open("src/calc.py")
    run_fix(editor, bufnr)
    wait_preview(editor)
    # The person types in the file while the edit waits (a new first line).
    editor.lua("vim.api.nvim_buf_set_lines(..., 0, 0, false, {'# note'})", bufnr)
    editor.lua("_G.agentls_test_choice = 'Retry'")

    editor.nvim.command("AgentApply")
    result = action_result(editor)

    assert result["applied"] is False and "changed in the editor" in result["failureReason"]
    assert editor.lines(bufnr) == ["# note", *CALC.splitlines()]
    # The server offered a retry on the current text; the person took it.
    prompts = editor.wait("the retry question",
                          lambda: editor.lua("return _G.agentls_test_prompts"))
    assert any("not applied" in p for p in prompts)
    wait_preview(editor)
    editor.nvim.command("AgentApply")
    editor.wait("the retried edit", lambda: editor.lines(bufnr) == ["# note", *FIXED.splitlines()])
