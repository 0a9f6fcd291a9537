"""Next-edit suggestions in real headless Neovim 0.11 (the plugin's next_edit.lua: extmarks),
against the real server and the scripted model (not a real model: its ``rewrite`` replies
rewrite the prompt's editable region): shown where it goes after a change in normal mode,
a jump to it when it is off screen, accepted (applied, the next one shown), dismissed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import options_for
from tests.nvim.conftest import Editor, isolate, running, start_editor

SOURCE = ("def scale(values, count):\n"
          "    out = []\n"
          "    for value in values:\n"
          "        out.append(value * count)\n"
          "    return out, count\n")
SHOWN = "return require('agentls.next_edit').shown()"
MARKS = """
local ns = vim.api.nvim_get_namespaces()['agentls_next_edit']
local out = {}
for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
  local d = mark[4]
  table.insert(out, { row = mark[2], col = mark[3], end_col = d.end_col, hl = d.hl_group,
    text = d.virt_text and d.virt_text[1][1], text_hl = d.virt_text and d.virt_text[1][2],
    pos = d.virt_text_pos })
end
return out
"""


@pytest.fixture
def ed(tmp_path: Path, project: Path, model: ReplayServer,
       monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    isolate(monkeypatch, tmp_path, project)
    model.load({"steps": [{"times": "*", "reply": {"rewrite": [["count", "total"]]}}]})
    settings = options_for(model)
    settings["next_edit"] = {"model": "scripted-model", "format": "zeta", "debounce_ms": 0}
    (project / "src" / "scale.py").write_text(SOURCE)
    far = SOURCE.replace("    return out, count\n", "\n" * 60 + "    return out, count\n")
    (project / "src" / "far.py").write_text(far)
    with running(start_editor(tmp_path, project, settings)) as editor:
        editor.lua("local c = require('agentls.config').options;"
                   " c.next_edit = { enabled = true, debounce_ms = 10 };"
                   " require('agentls.next_edit').setup()")
        yield editor


def completions(model: ReplayServer) -> int:
    return len([r for r in model.requests if r.path == "/v1/completions"])


def rename_parameter(ed: Editor, relative: str) -> int:
    """Open the file and rename the parameter in normal mode, as a person would."""
    buf = ed.open(relative)
    ed.nvim.command("call cursor(1, 19)")
    ed.nvim.input("ciwtotal<Esc>")
    ed.wait("the rename", lambda: ed.lines(buf)[0] == "def scale(values, total):")
    return buf


def test_shown_where_it_goes_then_accepted_and_the_next_one(
        ed: Editor, model: ReplayServer) -> None:
    buf = rename_parameter(ed, "src/scale.py")
    shown = ed.wait("a next edit", lambda: ed.lua(SHOWN))
    assert shown["text"] == "total" and shown["range"]["start"] == {"line": 3, "character": 27}
    assert shown.get("hint") is None  # on screen: drawn where it goes
    marks = ed.lua(MARKS)
    (removed,) = [m for m in marks if m.get("hl")]
    (added,) = [m for m in marks if m.get("text")]
    assert (removed["row"], removed["col"], removed["end_col"], removed["hl"]) == (
        3, 27, 32, "AgentlsNextEditDelete")
    assert (added["row"], added["col"], added["text"], added["text_hl"], added["pos"]) == (
        3, 32, "total", "AgentlsNextEditAdd", "inline")
    ed.capture("next-edit-shown")
    asked = completions(model)
    ed.nvim.input("<Tab>")  # accept: applied, then the next one
    ed.wait("the edit applied", lambda: ed.lines(buf)[3] == "        out.append(value * total)")
    second = ed.wait("the next edit", lambda: (ed.lua(SHOWN) or {}).get("range", {}).get(
        "start") == {"line": 4, "character": 16} and ed.lua(SHOWN))
    assert second["text"] == "total"
    assert completions(model) == asked  # from the same rewrite: no model request
    ed.nvim.input("<Tab>")
    ed.wait("the second applied", lambda: ed.lines(buf)[4] == "    return out, total")
    assert ed.lines(buf) == SOURCE.replace("count", "total").splitlines()


def test_off_screen_the_accept_key_jumps_first(ed: Editor, model: ReplayServer) -> None:
    buf = rename_parameter(ed, "src/far.py")
    ed.wait("the first next edit", lambda: ed.lua(SHOWN))
    ed.nvim.input("<Tab>")  # line 4, on screen: applied
    ed.wait("line 4 applied", lambda: ed.lines(buf)[3] == "        out.append(value * total)")
    far = ed.wait("the far one", lambda: (ed.lua(SHOWN) or {}).get("hint") and ed.lua(SHOWN))
    assert far["range"]["start"]["line"] == 64
    assert far["hint"] == "next edit at line 65 (<Tab>)"
    hint = [m for m in ed.lua(MARKS) if m.get("pos") == "eol"]
    assert hint and hint[0]["row"] == ed.lua("return vim.api.nvim_win_get_cursor(0)[1] - 1")
    ed.capture("next-edit-off-screen")
    ed.nvim.input("<Tab>")  # jumps
    ed.wait("the cursor at the edit", lambda: ed.lua(
        "return vim.api.nvim_win_get_cursor(0)")[0] == 65)
    assert ed.lines(buf)[64] == "    return out, count"  # not applied yet
    assert ed.lua(SHOWN).get("hint") is None
    ed.nvim.input("<Tab>")
    ed.wait("applied after the jump", lambda: ed.lines(buf)[64] == "    return out, total")


def test_dismissed_and_not_offered_again(ed: Editor, model: ReplayServer) -> None:
    buf = rename_parameter(ed, "src/scale.py")
    ed.wait("a next edit", lambda: ed.lua(SHOWN))
    ed.nvim.input("<Esc>")
    ed.wait("dismissed", lambda: ed.lua(SHOWN) is None and ed.lua(MARKS) == [])
    assert ed.lines(buf)[3] == "        out.append(value * count)"
    # a change elsewhere asks again: the model rewrites both uses as before, and the one
    # turned down is passed over for the other
    ed.nvim.command("call cursor(2, 1)")
    ed.nvim.input("A  # list<Esc>")
    shown = ed.wait("the other use offered", lambda: (ed.lua(SHOWN) or {}).get(
        "range", {}).get("start", {}).get("line") == 4 and ed.lua(SHOWN))
    assert shown["text"] == "total"
    assert completions(model) == 2


def test_insert_mode_is_the_ghost_texts(ed: Editor, model: ReplayServer) -> None:
    rename_parameter(ed, "src/scale.py")
    ed.wait("a next edit", lambda: ed.lua(SHOWN))
    ed.nvim.input("o")  # insert mode: the next edit is hidden
    ed.wait("hidden in insert mode", lambda: ed.lua(SHOWN) is None and ed.lua(MARKS) == [])
