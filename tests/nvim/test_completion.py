"""Completions as you type in real headless Neovim 0.11 (the plugin's own ghost text: an
extmark with virtual text), against the real server and the scripted model (not a real
model): shown as you type, accept word / line / all, typed through, cleared on mode change
and cursor move, the toggle."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import options_for
from tests.nvim.conftest import Editor, isolate, running, start_editor

STEPS: list[dict[str, Any]] = [
    {"match": {"prompt": "/    re$/"}, "times": "*", "reply": {"text": "turn a + b"}},
    {"match": {"prompt": "/    fo$/"}, "times": "*",
     "reply": {"text": "r x in items:\n        total += x"}},
    {"times": "*", "reply": {"text": ""}},
]

SHOWN = "return require('agentls.completion').shown()"
GHOST = """
local ns = vim.api.nvim_get_namespaces()['agentls_completion']
local out = {}
for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
  local d = mark[4]
  table.insert(out, { row = mark[2], col = mark[3], text = d.virt_text and d.virt_text[1][1],
    hl = d.virt_text and d.virt_text[1][2], more = d.virt_lines and #d.virt_lines or 0 })
end
return out
"""


@pytest.fixture
def ed(tmp_path: Path, project: Path, model: ReplayServer,
       monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    isolate(monkeypatch, tmp_path, project)
    model.load({"steps": STEPS})
    settings = options_for(model)
    settings["completion"] = {"model": "scripted-model", "debounce_ms": 0}
    (project / "src" / "sum.py").write_text("def add(a, b):\n")
    with running(start_editor(tmp_path, project, settings)) as editor:
        yield editor


def completion_requests(model: ReplayServer) -> int:
    return len([r for r in model.requests if r.path == "/v1/completions"])


def type_keys(ed: Editor, keys: str) -> None:
    ed.nvim.input(keys)


def open_plain(ed: Editor, relative: str) -> int:
    """Open a file with no automatic indent, so the keys typed are the text."""
    buf = ed.open(relative)
    ed.nvim.command("setlocal noautoindent nosmartindent indentexpr= indentkeys=")
    return buf


def test_ghost_text_accept_word_then_line(ed: Editor, model: ReplayServer) -> None:
    buf = open_plain(ed, "src/sum.py")
    type_keys(ed, "Go    re")
    ed.wait("the ghost text", lambda: ed.lua(SHOWN) == "turn a + b")
    (mark,) = ed.lua(GHOST)
    assert (mark["row"], mark["col"], mark["text"], mark["hl"]) == (
        1, 6, "turn a + b", "AgentlsGhostText")
    assert ed.lines(buf) == ["def add(a, b):", "    re"]  # virtual: not in the buffer
    ed.capture("completion-ghost")
    asked = completion_requests(model)

    type_keys(ed, "<M-w>")  # accept word
    ed.wait("the word accepted", lambda: ed.lines(buf)[1] == "    return")
    assert ed.lua(SHOWN) == " a + b"
    type_keys(ed, "<M-l>")  # accept line
    ed.wait("the line accepted", lambda: ed.lines(buf)[1] == "    return a + b")
    assert ed.lua(SHOWN) is None and ed.lua(GHOST) == []
    assert completion_requests(model) == asked  # accepting asked the model nothing
    assert ed.lua("return require('agentls.completion').status()") == "idle"


def test_tab_accepts_all_and_typing_through(ed: Editor, model: ReplayServer) -> None:
    buf = open_plain(ed, "src/sum.py")
    type_keys(ed, "Go    fo")
    ed.wait("the ghost text", lambda: ed.lua(SHOWN) == "r x in items:\n        total += x")
    (mark,) = ed.lua(GHOST)
    assert mark["text"] == "r x in items:" and mark["more"] == 1
    asked = completion_requests(model)
    type_keys(ed, "r x")  # typed through: the rest stays, the server answers from memory
    ed.wait("the rest shown", lambda: ed.lua(SHOWN) == " in items:\n        total += x")
    type_keys(ed, "<Tab>")
    ed.wait("all accepted", lambda: ed.lines(buf)[1:] == ["    for x in items:",
                                                         "        total += x"])
    assert ed.lua("return vim.api.nvim_win_get_cursor(0)") == [3, 18]
    assert completion_requests(model) == asked
    # with nothing shown, Tab does what it does (a tab, or spaces with 'expandtab')
    type_keys(ed, "<CR><Tab>")
    ed.wait("a plain tab", lambda: len(ed.lines(buf)) == 4 and ed.lines(buf)[-1] in (
        "\t", " " * int(ed.lua("return vim.fn.exists('*shiftwidth') and vim.fn.shiftwidth()"))))


def test_cleared_on_mode_change_and_cursor_move(ed: Editor, model: ReplayServer) -> None:
    buf = open_plain(ed, "src/sum.py")
    type_keys(ed, "Go    re")
    ed.wait("the ghost text", lambda: ed.lua(SHOWN) == "turn a + b")
    type_keys(ed, "<Left>")
    ed.wait("cleared on cursor move", lambda: ed.lua(GHOST) == [])
    type_keys(ed, "<End>e")  # "    ree": nothing fits
    type_keys(ed, "<BS>")
    ed.wait("shown again", lambda: ed.lua(SHOWN) == "turn a + b")
    type_keys(ed, "<Esc>")
    ed.wait("cleared on leaving insert mode", lambda: ed.lua(GHOST) == [])
    assert ed.lines(buf) == ["def add(a, b):", "    re"]
    type_keys(ed, "A")
    ed.nvim.command("AgentCompletionToggle")
    assert ed.lua("return require('agentls.completion').status()") == "disabled"
    before = len(model.requests)
    type_keys(ed, "x<BS>")
    ed.wait("the keys typed", lambda: ed.lines(buf)[1] == "    re")
    assert ed.lua(GHOST) == [] and len(model.requests) == before
