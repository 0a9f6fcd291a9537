"""The review in the buffer, in real Neovim against the real server and the scripted model:
hunk by hunk, several files (created and deleted ones too), from insert mode, undo; the
answer to workspace/applyEdit is the truth and the server records what was kept."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pynvim
import pytest

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import call, options_for
from tests.nvim.conftest import ARTIFACTS, INIT, PLUGIN, Editor, lua_string, nvim_binary

MATH = "".join(f"line {i}\n" for i in range(1, 21))
FIRST = MATH.replace("line 2\n", "line two\n")
BOTH = FIRST.replace("line 18\n", "line eighteen\n")
TWO_HUNKS = call("edit_file", "e1", path="src/math.txt", edits=[
    {"search": "line 2\n", "replace": "line two\n"},
    {"search": "line 18\n", "replace": "line eighteen\n"}])

STATE = "return require('agentls.review').state()"


def chat_text(editor: Editor) -> str:
    return str(editor.lua("local s = require('agentls.chat').state()"
                          " return table.concat(vim.api.nvim_buf_get_lines(s.bufnr, 0, -1, false),"
                          " '\\n')"))


def running(editor: Editor) -> bool:
    return bool(editor.lua("return require('agentls.chat').state().run ~= nil"))


def wait_review(editor: Editor) -> dict:
    state: dict = editor.wait("the review", lambda: editor.lua(STATE))
    return state


def two_hunk_turn(model: ReplayServer, times: int = 1) -> None:
    model.load({"steps": [
        {"match": {"tool_results": False}, "times": times, "reply": {"tool_calls": [TWO_HUNKS]}},
        {"match": {"tool_results": True}, "times": times, "reply": {"text": "Renamed two lines."}},
        {"reply": {"text": "Understood."}},
    ]})


def review_two_hunks(editor: Editor, model: ReplayServer, project: Path) -> int:
    """src/math.txt open, the two-hunk rename asked for in the chat and under review: its
    buffer number."""
    (project / "src" / "math.txt").write_text(MATH)
    two_hunk_turn(model)
    bufnr: int = editor.open("src/math.txt")
    editor.nvim.command("AgentChat rename lines 2 and 18")
    wait_review(editor)
    return bufnr


def keys(editor: Editor, typed: str) -> None:
    editor.nvim.input(typed)
    editor.lua("return 1")  # the input is handled before the next request



@contextmanager
def terminal_nvim(tmp_path: Path, project: Path, model: ReplayServer,
                  monkeypatch: pytest.MonkeyPatch, file: str,
                  size: tuple[int, int] = (80, 24)) -> Iterator[tuple[Any, Editor, Any]]:
    """Neovim with the plugin in a real terminal (tmux, ``size`` columns x lines) on ``file``,
    its client initialized; yields the session, an Editor and a function that captures the
    screen. The terminal is ended afterwards."""
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pack = tmp_path / "pack"
    (pack / "pack" / "agentls" / "opt").mkdir(parents=True)
    (pack / "pack" / "agentls" / "opt" / "agentls").symlink_to(PLUGIN)
    init = tmp_path / "init.lua"
    server = [sys.executable, "-P", "-m", "agentls", "serve"]
    init.write_text((INIT % {"pack": lua_string(str(pack)),
                             "cmd": "{" + ", ".join(lua_string(c) for c in server) + "}",
                             "settings": lua_string(json.dumps(options_for(model)))})
                    .replace("vim.o.columns, vim.o.lines = 80, 24", ""))
    sock, tmux = tmp_path / "nvim.sock", ["tmux", "-L", f"agentls-test-{os.getpid()}"]
    subprocess.run([*tmux, "new-session", "-d", "-x", str(size[0]), "-y", str(size[1]),
                    "-c", str(project),
                    f"{nvim_binary()} -n -i NONE -u {init} --listen {sock} {file}"],
                   check=True)

    def capture() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p"], check=True, capture_output=True,
                              text=True).stdout

    try:
        deadline = time.monotonic() + 30
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        nvim = pynvim.attach("socket", path=str(sock))
        editor = Editor(nvim, project)
        editor.wait("the client", lambda: editor.lua(
            "local c = vim.lsp.get_clients({name='agentls'})[1] return c ~= nil and c.initialized"))
        yield nvim, editor, capture
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)

def test_keep_one_of_two_hunks(editor: Editor, model: ReplayServer, project: Path) -> None:
    (project / "src" / "math.txt").write_text(MATH)
    two_hunk_turn(model)
    bufnr = editor.open("src/math.txt")
    editor.nvim.command("AgentChat rename lines 2 and 18")

    state = wait_review(editor)
    assert state["files"][0]["hunks"] == ["pending", "pending"]
    # Drawn in the buffer: the proposal in place, the old line as a virtual line, signs.
    assert editor.lines(bufnr) == BOTH.splitlines()
    marks = editor.lua("return vim.api.nvim_buf_get_extmarks(..., -1, 0, -1, {details = true})",
                       bufnr)
    virt = [m[3]["virt_lines"][0][0][0].strip() for m in marks if m[3].get("virt_lines")]
    assert virt == ["line 2", "line 18"]
    assert sum(1 for m in marks if (m[3].get("sign_text") or "").strip() == "+") == 2
    assert editor.lua("return vim.api.nvim_get_mode().mode") == "n"
    assert (project / "src" / "math.txt").read_text() == MATH
    editor.capture("review-inline")

    # The cursor is on the first change: keep it; then the second: reject it.
    keys(editor, "ga")
    assert editor.lua(STATE)["files"][0]["hunks"] == ["kept", "pending"]
    assert editor.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 18
    keys(editor, "gr")

    editor.wait("the run to end", lambda: not running(editor))
    assert editor.lua(STATE) is None
    assert editor.lines(bufnr) == FIRST.splitlines()
    assert (project / "src" / "math.txt").read_text() == FIRST
    text = chat_text(editor)
    assert "edit partly applied: kept 1 of 2 changes in src/math.txt" in text
    # Until the review ended the edit was only proposed, and the transcript says so.
    assert "✓ proposed (path: src/math.txt)" in text and "✓ ok (path: src/math.txt)" not in text
    # So is the model's own claim, above the outcome line.
    assert "proposed: Renamed two lines." in text.splitlines(), text
    editor.capture("review-outcome")
    assert not editor.lua("return vim.bo[...].modified", bufnr)
    # No marks or review keys left behind.
    assert editor.lua("return #vim.api.nvim_buf_get_extmarks(..., -1, 0, -1, {})", bufnr) == 0
    assert editor.lua("return vim.fn.maparg('ga', 'n')") == ""

    # The server recorded what was kept, and the model's next request says so exactly.
    session = editor.lua("return require('agentls.chat').state().session")
    history = editor.lua("local c = require('agentls').client() return"
                         " c:request_sync('agentls/history', {sessionId = ...}, 10000).result",
                         session)
    reviews = [m["metadata"]["review"] for m in history["messages"]
               if (m.get("metadata") or {}).get("review")]
    assert reviews == [[{"path": str(project / "src" / "math.txt"), "kind": "update",
                         "state": "partial", "hunks": 2, "kept": [1]}]]
    editor.nvim.command("AgentChat go on")
    editor.wait("the next answer", lambda: "Understood." in chat_text(editor))
    told = str(model.requests[-1].body["messages"])
    assert "kept 1 of your 2 changes to src/math.txt (changes 1)" in told
    assert "[line 18] -> [line eighteen]" in told

    # Undo takes back exactly what was kept.
    editor.nvim.command("wincmd p")
    editor.lua("vim.api.nvim_set_current_buf(...)", bufnr)
    keys(editor, "u")
    assert editor.lines(bufnr) == MATH.splitlines()


def test_reject_all_changes_nothing(editor: Editor, model: ReplayServer, project: Path) -> None:
    bufnr = review_two_hunks(editor, model, project)

    keys(editor, "gR")

    editor.wait("the run to end", lambda: not running(editor))
    assert editor.lines(bufnr) == MATH.splitlines()
    assert (project / "src" / "math.txt").read_text() == MATH
    assert not editor.lua("return vim.bo[...].modified", bufnr)
    assert "edit not applied: rejected src/math.txt" in chat_text(editor)


def test_accept_all_from_insert_mode(editor: Editor, model: ReplayServer,
                                     project: Path) -> None:
    (project / "src" / "math.txt").write_text(MATH)
    two_hunk_turn(model)
    bufnr = editor.open("src/math.txt")
    editor.nvim.command("AgentChat")
    # In the prompt area, in insert mode, the person types and sends with <C-s>.
    editor.nvim.input("Grename lines 2 and 18<C-s>")
    editor.nvim.input("")  # still in insert mode when the review arrives

    wait_review(editor)
    editor.wait("normal mode", lambda: editor.lua("return vim.api.nvim_get_mode().mode") == "n")
    assert editor.lua("return vim.api.nvim_get_current_buf()") == bufnr
    keys(editor, "gA")

    editor.wait("the run to end", lambda: not running(editor))
    assert (project / "src" / "math.txt").read_text() == BOTH
    assert "edit applied" in chat_text(editor)
    keys(editor, "u")
    assert editor.lines(bufnr) == MATH.splitlines()


def test_several_files_with_a_create_and_a_delete(editor: Editor, model: ReplayServer,
                                                  project: Path) -> None:
    (project / "src" / "math.txt").write_text(MATH)
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            TWO_HUNKS,
            call("write_file", "w1", path="src/new.py", content="print('new')\n"),
            call("delete_file", "d1", path="README.md")]}},
        {"match": {"tool_results": True}, "reply": {"text": "Done."}},
    ]})
    editor.open("src/calc.py")
    editor.nvim.command("AgentChat three changes")
    state = wait_review(editor)
    kinds = {Path(f["path"]).name: f["kind"] for f in state["files"]}
    assert kinds == {"math.txt": "update", "new.py": "create", "README.md": "delete"}
    screen = editor.capture("review-list")
    assert "AgentLS: 3 files changed (review)" in screen
    assert "src/new.py (created): pending" in screen
    assert "README.md (deleted, 1 line): pending" in screen
    assert "src/math.txt (changed): 2 changes, pending" in screen

    # In the list: keep the created file, reject the delete, keep math.txt's first change.
    list_win = editor.lua("for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
                          " if vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w))"
                          ":find('agentls://review') then return w end end")
    editor.lua("vim.api.nvim_set_current_win(...)", list_win)
    rows = editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")

    def goto(text: str) -> None:
        row = next(i for i, line in enumerate(rows) if text in line) + 1
        editor.lua("vim.api.nvim_set_current_win(...) vim.api.nvim_win_set_cursor(0, {"
                   + str(row) + ", 0})", list_win)

    goto("src/new.py (created)")
    keys(editor, "ga")
    assert (project / "src" / "new.py").read_text() == "print('new')\n"
    # The deleted file's lines are shown under its line in the list.
    listed = editor.lua("local b = vim.api.nvim_win_get_buf(...)"
                        " local out = {} for _, m in ipairs(vim.api.nvim_buf_get_extmarks(b, -1,"
                        " 0, -1, {details = true})) do for _, l in ipairs(m[4].virt_lines or {})"
                        " do table.insert(out, l[1][1]) end end return out", list_win)
    assert "    -# calc" in listed
    goto("README.md (deleted")
    keys(editor, "gr")
    goto("change 1")
    keys(editor, "ga")
    goto("change 2")
    keys(editor, "gr")

    editor.wait("the run to end", lambda: not running(editor))
    assert (project / "README.md").read_text() == "# calc\n"
    assert (project / "src" / "math.txt").read_text() == FIRST
    text = chat_text(editor)
    assert ("edit partly applied: kept 1 of 2 changes in src/math.txt; kept created src/new.py;"
            " rejected deleted README.md") in text


def test_a_second_review_while_one_is_open_is_refused(editor: Editor, model: ReplayServer,
                                                      project: Path) -> None:
    review_two_hunks(editor, model, project)
    answer = editor.lua("return require('agentls.review').run({documentChanges = {}}, 'x',"
                        " 'utf-16', nil, require('agentls.preview').files)")
    assert answer["applied"] is False
    assert "another AgentLS review is still open (src/math.txt)" in answer["failureReason"]
    keys(editor, "gA")
    editor.wait("the run to end", lambda: not running(editor))


def test_help_works_with_the_packadd_recipe(editor: Editor, tmp_path: Path) -> None:
    editor.nvim.command("help agentls-review")
    assert editor.lua("return vim.fn.expand('%:t')") == "agentls.txt"
    assert "ga      keep the change under the cursor" in "\n".join(
        editor.lines(editor.lua("return vim.api.nvim_get_current_buf()")))
    # The shipped doc/tags is what :helptags makes of the shipped doc.
    copy = tmp_path / "doc"
    copy.mkdir()
    (copy / "agentls.txt").write_bytes((PLUGIN / "doc" / "agentls.txt").read_bytes())
    editor.nvim.command(f"helptags {copy}")
    assert (copy / "tags").read_text() == (PLUGIN / "doc" / "tags").read_text(), (
        "doc/tags is stale: run `nvim --headless -c 'helptags clients/neovim/doc' -c q`")


def test_a_hunk_edited_during_the_review(editor: Editor, model: ReplayServer,
                                         project: Path) -> None:
    bufnr = review_two_hunks(editor, model, project)
    # The person rewrites the first proposed line (and adds one) before deciding.
    editor.lua("vim.api.nvim_buf_set_lines(..., 1, 2, false, {'line 2 mine', 'extra'})", bufnr)
    editor.lua("vim.api.nvim_win_set_cursor(0, {2, 0})")

    keys(editor, "gr")  # refused: putting the old line back would drop the person's edit
    assert editor.lua(STATE)["files"][0]["hunks"] == ["pending", "pending"]
    assert editor.lines(bufnr)[1:3] == ["line 2 mine", "extra"]
    keys(editor, "ga")  # kept as the person left it
    keys(editor, "gr")

    editor.wait("the run to end", lambda: not running(editor))
    expected = MATH.replace("line 2\n", "line 2 mine\nextra\n")
    assert (project / "src" / "math.txt").read_text() == expected
    assert "edit partly applied: kept 1 of 2 changes in src/math.txt (1 edited)" in chat_text(
        editor)


def test_a_buffer_closed_during_the_review(editor: Editor, model: ReplayServer,
                                           project: Path) -> None:
    bufnr = review_two_hunks(editor, model, project)

    editor.nvim.command(f"bwipeout! {bufnr}")

    editor.wait("the run to end", lambda: not running(editor))
    assert (project / "src" / "math.txt").read_text() == MATH
    assert editor.lua(STATE) is None
    assert "edit not applied" in chat_text(editor)


def test_a_file_deleted_on_disk_during_the_review(editor: Editor, model: ReplayServer,
                                                  project: Path) -> None:
    bufnr = review_two_hunks(editor, model, project)
    (project / "src" / "math.txt").unlink()

    keys(editor, "gA")

    editor.wait("the run to end", lambda: not running(editor))
    assert not (project / "src" / "math.txt").exists()
    assert editor.lines(bufnr) == MATH.splitlines()
    assert "edit not applied" in chat_text(editor)


def test_crlf_and_no_final_newline_are_kept(editor: Editor, model: ReplayServer,
                                            project: Path) -> None:
    (project / "src" / "dos.txt").write_bytes(MATH.replace("\n", "\r\n").encode())
    (project / "src" / "tail.txt").write_bytes(MATH.rstrip("\n").encode())
    model.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("edit_file", "e1", path="src/dos.txt", edits=[
                {"search": "line 2\r\n", "replace": "line two\r\n"},
                {"search": "line 18\r\n", "replace": "line eighteen\r\n"}]),
            call("edit_file", "e2", path="src/tail.txt", edits=[
                {"search": "line 2\n", "replace": "line two\n"},
                {"search": "line 20", "replace": "line twenty"}])]}},
        {"match": {"tool_results": True}, "reply": {"text": "Done."}},
    ]})
    editor.open("src/calc.py")
    editor.nvim.command("AgentChat two files")
    wait_review(editor)
    # Keep the first change of each file, reject the second.
    for _ in range(2):
        keys(editor, "]h")
    editor.lua("vim.api.nvim_set_current_buf(vim.fn.bufnr('src/dos.txt'))"
               " vim.api.nvim_win_set_cursor(0, {1, 0})")
    keys(editor, "ga")
    keys(editor, "gr")
    editor.lua("vim.api.nvim_set_current_buf(vim.fn.bufnr('src/tail.txt'))"
               " vim.api.nvim_win_set_cursor(0, {1, 0})")
    keys(editor, "ga")
    keys(editor, "gr")

    editor.wait("the run to end", lambda: not running(editor))
    assert (project / "src" / "dos.txt").read_bytes() == (
        MATH.replace("line 2\n", "line two\n").replace("\n", "\r\n").encode())
    assert (project / "src" / "tail.txt").read_bytes() == (
        MATH.rstrip("\n").replace("line 2\n", "line two\n").encode())
    text = chat_text(editor)
    assert "kept 1 of 2 changes in src/dos.txt; kept 1 of 2 changes in src/tail.txt" in text


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux draws the real terminal screen")
def test_the_review_as_a_terminal_shows_it(tmp_path: Path, project: Path, model: ReplayServer,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Neovim in a real terminal (tmux): the captured screen shows the proposed lines with
    their signs and the removed ones as virtual lines (tests/artifacts/nvim-review-screen.txt)."""
    (project / "src" / "math.txt").write_text(MATH)
    two_hunk_turn(model)
    with terminal_nvim(tmp_path, project, model, monkeypatch, "src/math.txt",
                       size=(100, 30)) as (nvim, editor, capture):
        # Notifications on: the review's messages are one line each (no hit-enter prompt).
        assert editor.lua("return require('agentls.config').options.notify") is True
        editor.lua("vim.o.signcolumn = 'yes'")
        nvim.command("AgentChat rename lines 2 and 18")
        wait_review(editor)
        nvim.command("redraw!")
        time.sleep(0.3)
        screen = capture()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "nvim-review-screen.txt").write_text(screen, encoding="utf-8")
        rows = [line for line in screen.splitlines() if "line" in line]
        old_row = next(i for i, line in enumerate(rows) if line.split("│")[0].strip() == "line 2")
        assert rows[old_row + 1].split("│")[0].rstrip().endswith("+ line two"), screen
        assert any(line.split("│")[0].strip() == "line 18" for line in rows), screen
        nvim.command("AgentReview accept_all")
        editor.wait("the file written", lambda: (project / "src" / "math.txt").read_text()
                    == BOTH)
        assert nvim.api.get_mode() == {"mode": "n", "blocking": False}


def test_a_new_chat_while_a_review_is_open(editor: Editor, model: ReplayServer,
                                           project: Path) -> None:
    """One review at a time: a prompt sent while a turn's edit is in review is refused with
    the reason, and so is a cancel (the edit is out); the review is the person's to finish,
    and the turn ends with it."""
    (project / "src" / "math.txt").write_text(MATH)
    two_hunk_turn(model)
    bufnr = editor.open("src/math.txt")
    editor.lua("_G.notes = {} local notify = vim.notify vim.notify = function(m, l, o)"
               " table.insert(_G.notes, m) return notify(m, l, o) end")
    editor.nvim.command("AgentChat rename lines 2 and 18")
    wait_review(editor)

    editor.nvim.command("AgentChat and also line 3")
    assert ("AgentLS: a turn is still running; its edit is waiting for your review; the turn"
            " ends with it (gA keep all, gR reject all)") in editor.lua("return _G.notes")
    assert editor.lua(STATE)["files"][0]["hunks"] == ["pending", "pending"]

    # A cancel cannot take back an edit already out for review: the chat says so, and why.
    editor.nvim.command("AgentCancel")
    editor.wait("the refusal", lambda: "_not stopped: its edit is waiting for your review; the"
                " turn ends with it (gA keep all, gR reject all)_" in chat_text(editor))
    assert running(editor)
    assert editor.lua(STATE)["files"][0]["hunks"] == ["pending", "pending"]
    assert editor.lines(bufnr) == BOTH.splitlines()

    editor.lua("vim.api.nvim_set_current_buf(...)", bufnr)
    keys(editor, "gA")
    editor.wait("the run to end", lambda: not running(editor))
    assert editor.lua(STATE) is None
    assert (project / "src" / "math.txt").read_text() == BOTH
    assert "edit applied" in chat_text(editor).rsplit("_not stopped", 1)[1]


BIG = """
local path, n = ...
local edits = {}
for k = 0, n - 1 do
  local row = 2 * k -- every other line: n hunks, one unchanged line between each
  table.insert(edits, { range = { start = { line = row, character = 0 },
    ["end"] = { line = row, character = #("line " .. (row + 1)) } },
    newText = "LINE " .. (row + 1) })
end
local edit = { documentChanges = { { textDocument = { uri = vim.uri_from_fname(path),
  version = vim.NIL }, edits = edits } } }
_G.big_answer = nil
_G.big_run = coroutine.create(function()
  _G.big_answer = require("agentls.preview").handle(nil, { edit = edit, label = "big" },
    { client_id = -1 })
end)
assert(coroutine.resume(_G.big_run))
"""


def test_two_thousand_hunks(editor: Editor, project: Path) -> None:
    """2,000 hunks in one file: all drawn, each key acts on the hunk under the cursor and
    moves to the next, and keep-all ends the review with the truthful answer."""
    count = 2000
    text = "".join(f"line {i}\n" for i in range(1, 2 * count + 1))
    path = project / "src" / "big.txt"
    path.write_text(text)
    bufnr = editor.open("src/big.txt")
    editor.lua(BIG, str(path), count)

    state = editor.lua(STATE)
    assert state["files"][0]["hunks"] == ["pending"] * count
    assert editor.lua("return vim.api.nvim_buf_get_lines(..., 3998, 4000, false)", bufnr) == [
        "LINE 3999", "line 4000"]
    marks = editor.lua("return #vim.tbl_filter(function(m) return m[4].virt_lines ~= nil end,"
                       " vim.api.nvim_buf_get_extmarks(..., -1, 0, -1, {details = true}))", bufnr)
    assert marks == count
    assert editor.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 1

    keys(editor, "ga")  # the first kept; on to the second, two lines down
    assert editor.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 3
    editor.lua("vim.api.nvim_win_set_cursor(0, {3001, 0})")
    keys(editor, "gr")  # change 1501 (line 3001) rejected
    assert editor.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 3003
    keys(editor, "[h")
    assert editor.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 2999
    keys(editor, "gA")

    assert editor.lua(STATE) is None
    answer = editor.lua("return _G.big_answer")
    assert answer["applied"] is False
    # Said in ranges: a line listing 1,999 numbers would stop Neovim at a hit-enter prompt.
    assert answer["failureReason"] == "kept 1999 of 2000 changes in src/big.txt (1-1500, 1502-2000)"
    expected = "".join((f"LINE {i}\n" if i % 2 and i != 3001 else f"line {i}\n")
                       for i in range(1, 2 * count + 1))
    assert path.read_text() == expected
    assert editor.lua("return #vim.api.nvim_buf_get_extmarks(..., -1, 0, -1, {})", bufnr) == 0


def test_the_summary_of_scattered_kept_changes_stays_short(editor: Editor,
                                                           project: Path) -> None:
    """Every other change of 2,000 kept: the summary names the first ranges and counts the
    rest, so the notification stays one short line."""
    summary = editor.lua("""
      local f = { path = ..., kind = "update", hunks = {} }
      for i = 1, 2000 do
        table.insert(f.hunks, { index = i, state = i % 2 == 1 and "kept" or "rejected" })
      end
      local all_kept, text = require("agentls.review.files").summary({ f })
      return { all_kept, text }""", str(project / "src" / "big.txt"))
    assert summary == [False, "kept 1000 of 2000 changes in src/big.txt (1, 3, 5, 7, 9, 11, 13,"
                              " 15, and 992 more ranges)"]


def test_a_buffer_written_then_closed_during_the_review(editor: Editor, model: ReplayServer,
                                                        project: Path) -> None:
    """:w then closing the buffer keeps what was written: the review ends with it kept."""
    bufnr = review_two_hunks(editor, model, project)

    editor.lua("vim.api.nvim_buf_call(..., function() vim.cmd('silent write') end)", bufnr)
    editor.nvim.command(f"bwipeout {bufnr}")

    editor.wait("the run to end", lambda: not running(editor))
    assert (project / "src" / "math.txt").read_text() == BOTH
    assert editor.lua(STATE) is None
    text = chat_text(editor)
    assert "edit applied" in text, text


FORTY = """
local root, n = ...
local changes = {}
for k = 1, n do
  local path = string.format("%s/src/file%02d.txt", root, k)
  table.insert(changes, { textDocument = { uri = vim.uri_from_fname(path), version = vim.NIL },
    edits = { { range = { start = { line = 1, character = 0 },
      ["end"] = { line = 1, character = 6 } }, newText = "LINE 2" } } })
end
_G.big_answer = nil
_G.big_run = coroutine.create(function()
  _G.big_answer = require("agentls.preview").handle(nil,
    { edit = { documentChanges = changes }, label = "forty files" }, { client_id = -1 })
end)
assert(coroutine.resume(_G.big_run))
"""


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux draws the real terminal screen")
def test_a_forty_file_review_ends_without_a_hit_enter_prompt(
        tmp_path: Path, project: Path, model: ReplayServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit of 40 files, reviewed in a real 80-column terminal (tmux) with notifications
    on: the "review done" message is one line that fits the screen, so Neovim does not stop
    at a hit-enter prompt, the applyEdit request is answered, and `:AgentReview list` shows
    each file's outcome afterwards (tests/artifacts/nvim-review-forty-files.txt)."""
    count = 40
    for k in range(1, count + 1):
        (project / "src" / f"file{k:02d}.txt").write_text("line 1\nline 2\nline 3\n")

    with terminal_nvim(tmp_path, project, model, monkeypatch, "src/file01.txt") as (
            nvim, editor, capture):
        assert editor.lua("return require('agentls.config').options.notify") is True
        editor.lua(FORTY, str(project), count)
        state = wait_review(editor)
        assert len(state["files"]) == count
        # Reject all in one step: forty outcomes to tell.
        nvim.input(":AgentReview reject_all<CR>")  # typed in the terminal's Neovim
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and nvim.api.get_mode()["mode"] != "r" \
                and (nvim.api.get_mode()["blocking"] or editor.lua("return _G.big_answer") is None):
            time.sleep(0.05)
        time.sleep(0.3)  # the message drawn
        mode = nvim.api.get_mode()  # a fast call: it answers even at a hit-enter prompt
        screen = capture()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "nvim-review-forty-files.txt").write_text(screen, encoding="utf-8")
        assert mode == {"mode": "n", "blocking": False}, screen
        answer = editor.lua("return _G.big_answer")
        assert answer["applied"] is False
        assert answer["failureReason"].count("rejected src/file") == count
        last = [line for line in screen.splitlines() if line.strip()][-1]
        assert last.strip() == "AgentLS: review done: rejected 40 files (:AgentReview list)", screen
        assert all((project / "src" / f"file{k:02d}.txt").read_text() == "line 1\nline 2\nline 3\n"
                   for k in range(1, count + 1))

        # Each file's outcome, after the review, in the list.
        nvim.command("AgentReview list")
        listed = editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
        assert listed[0] == "forty files (review done)"
        assert listed[1:] == [f"rejected src/file{k:02d}.txt" for k in range(1, count + 1)]
        nvim.command("redraw!")
        time.sleep(0.3)
        screen = capture()
        (ARTIFACTS / "nvim-review-forty-files-list.txt").write_text(screen, encoding="utf-8")
        assert "forty files (review done)" in screen, screen
        assert nvim.api.get_mode() == {"mode": "n", "blocking": False}, screen


def test_the_headline_fits_the_width_for_any_outcome(editor: Editor, project: Path) -> None:
    """Kept, partly kept, rejected and failed files counted in one line within the width; the
    whole summary when it fits; cut with an ellipsis on a screen too narrow even for counts."""
    headline = """
      local width, hint = ...
      local files = {}
      for k = 1, 30 do
        local states = k <= 20 and { "kept", "kept" } or (k <= 25 and { "kept", "rejected" }
          or { "rejected", "rejected" })
        local hs = {}
        for i, s in ipairs(states) do table.insert(hs, { index = i, state = s }) end
        table.insert(files, { path = vim.fn.getcwd() .. "/src/f" .. k .. ".txt", kind = "update",
          hunks = hs })
      end
      table.insert(files, { path = vim.fn.getcwd() .. "/src/new.py", kind = "create",
        state = "failed" })
      return require("agentls.review.files").headline(files, width, hint)"""
    counts = "kept 20 files, partly kept 5, rejected 5, failed 1"
    assert editor.lua(headline, 80, " (:AgentReview list)") == counts + " (:AgentReview list)"
    assert editor.lua(headline, 60, " (:AgentReview list)") == counts  # the hint left out
    assert editor.lua(headline, 20, "") == "kept 20 files, part…"
    short = editor.lua("""
      local f = { path = vim.fn.getcwd() .. "/src/a.txt", kind = "update",
        hunks = { { index = 1, state = "kept" }, { index = 2, state = "rejected" } } }
      return require("agentls.review.files").headline({ f }, 60, " (:AgentReview list)")""")
    assert short == "kept 1 of 2 changes in src/a.txt (1)"



GONE = """
local root, n, m, label = ...
local changes = {}
for k = 1, n do
  local path = string.format("%s/src/gone%02d.txt", root, k)
  table.insert(changes, { textDocument = { uri = vim.uri_from_fname(path), version = vim.NIL },
    edits = { { range = { start = { line = 1, character = 0 },
      ["end"] = { line = 1, character = 6 } }, newText = "LINE 2" } } })
end
for k = 1, m do  -- under a regular file: cannot be created
  table.insert(changes, { kind = "create",
    uri = vim.uri_from_fname(string.format("%s/src/blocker.txt/new%02d.txt", root, k)) })
end
_G.gone_answer = nil
_G.gone_run = coroutine.create(function()
  _G.gone_answer = require("agentls.preview").handle(nil,
    { edit = { documentChanges = changes }, label = label }, { client_id = -1 })
end)
assert(coroutine.resume(_G.gone_run))
"""


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux draws the real terminal screen")
def test_files_deleted_on_disk_or_not_applied_end_in_one_message(
        tmp_path: Path, project: Path, model: ReplayServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """30 files deleted on disk during a review, then 5 created files that cannot be written,
    each accepted in one step, in a real 80x24 terminal (tmux) with notifications on: one
    message counts them with the first names that fit (not one message per file, which
    stopped Neovim at a hit-enter prompt), the request is answered as before, and each file's
    outcome and reason is in `:AgentReview list` (tests/artifacts/nvim-review-gone-files*.txt,
    nvim-review-not-applied.txt)."""
    gone, failing = 30, 5
    for k in range(1, gone + 1):
        (project / "src" / f"gone{k:02d}.txt").write_text("line 1\nline 2\nline 3\n")
    (project / "src" / "blocker.txt").write_text("a file, not a folder\n")

    def review_ends(artifact: str) -> tuple[str, dict[str, Any], str]:
        """Accept all, typed in the terminal; the screen, the answer and the last line."""
        nvim.input(":AgentReview accept_all<CR>")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and nvim.api.get_mode()["mode"] != "r" \
                and (nvim.api.get_mode()["blocking"]
                     or editor.lua("return _G.gone_answer") is None):
            time.sleep(0.05)
        time.sleep(0.3)  # the message drawn
        mode = nvim.api.get_mode()  # a fast call: it answers even at a hit-enter prompt
        screen = capture()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / artifact).write_text(screen, encoding="utf-8")
        assert mode == {"mode": "n", "blocking": False}, screen
        assert "Press ENTER" not in screen, screen
        last = [line for line in screen.splitlines() if line.strip()][-1].rstrip()
        assert len(last) <= 80, screen
        return screen, editor.lua("return _G.gone_answer"), last

    with terminal_nvim(tmp_path, project, model, monkeypatch, "src/blocker.txt") as (
            nvim, editor, capture):
        assert editor.lua("return require('agentls.config').options.notify") is True

        # Thirty files deleted on disk while their review is open, then all accepted.
        editor.lua(GONE, str(project), gone, 0, "gone files")
        assert len(wait_review(editor)["files"]) == gone
        for k in range(1, gone + 1):
            (project / "src" / f"gone{k:02d}.txt").unlink()
        screen, answer, last = review_ends("nvim-review-gone-files.txt")
        assert answer["applied"] is False
        reason = answer["failureReason"]
        assert reason == "; ".join(f"rejected src/gone{k:02d}.txt (deleted on disk during the"
                                   " review)" for k in range(1, gone + 1)), reason
        assert last == "AgentLS: review done: 30 deleted on disk (gone01.txt, +29 more)", screen
        assert not any((project / "src" / f"gone{k:02d}.txt").exists()
                       for k in range(1, gone + 1))
        nvim.command("AgentReview list")
        listed = editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
        assert listed == ["gone files (review done)"] + [
            f"rejected src/gone{k:02d}.txt (deleted on disk during the review)"
            for k in range(1, gone + 1)]
        nvim.command("redraw!")
        time.sleep(0.3)
        screen = capture()
        (ARTIFACTS / "nvim-review-gone-files-list.txt").write_text(screen, encoding="utf-8")
        assert "rejected src/gone01.txt (deleted on disk during the review)" in screen, screen
        nvim.command("close")

        # Five created files that cannot be written (their folder is a file).
        editor.lua(GONE, str(project), 0, failing, "not applied")
        assert len(wait_review(editor)["files"]) == failing
        screen, answer, last = review_ends("nvim-review-not-applied.txt")
        assert answer == {"applied": False, "failureReason": "; ".join(
            f"failed created src/blocker.txt/new{k:02d}.txt" for k in range(1, failing + 1))}
        assert last.startswith("AgentLS: review done: 5 not applied (new01.txt, "), screen
        assert last.endswith(" more)"), screen
        assert (project / "src" / "blocker.txt").read_text() == "a file, not a folder\n"
        nvim.command("AgentReview list")
        listed = editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
        assert listed[0] == "not applied (review done)" and len(listed) == 1 + failing
        for k, line in enumerate(listed[1:], 1):  # each with its reason
            assert line.startswith(f"failed created src/blocker.txt/new{k:02d}.txt (")
            assert len(line) > len(f"failed created src/blocker.txt/new{k:02d}.txt (x)"), line
        assert nvim.api.get_mode() == {"mode": "n", "blocking": False}


def test_the_ending_message_fits_the_width(editor: Editor, project: Path) -> None:
    """Files not applied and deleted on disk: counted, then the first name of each, the hint,
    the other files' outcome and more names as long as they fit, never wider than the width;
    ERROR when one could not be applied, WARN when only deleted, INFO (the headline) else."""
    ending = """
      local width, failed, deleted, kept = ...
      local files = {}
      local function add(name, f)
        f.path = vim.fn.getcwd() .. "/src/" .. name
        table.insert(files, f)
      end
      for k = 1, failed do add("new" .. k .. ".py", { kind = "create", state = "failed",
        reason = "E739: Cannot create directory" }) end
      for k = 1, deleted do add("d" .. k .. ".txt", { kind = "update", deleted = true,
        hunks = { { index = 1, state = "rejected" } } }) end
      for k = 1, kept do add("k" .. k .. ".txt", { kind = "update",
        hunks = { { index = 1, state = "kept" } } }) end
      local text, level = require("agentls.review.files").ending(files, width,
        " (:AgentReview list)")
      return { text, level, vim.fn.strdisplaywidth(text) }"""
    hint = " (:AgentReview list)"
    error, warn, info = 4, 3, 2  # vim.log.levels
    assert editor.lua(ending, 240, 2, 12, 3) == [
        "review done: 2 not applied (new1.py, new2.py); 12 deleted on disk (d1.txt, d2.txt,"
        " d3.txt, d4.txt, d5.txt, d6.txt, d7.txt, d8.txt, d9.txt, d10.txt, d11.txt, d12.txt);"
        " kept src/k1.txt; kept src/k2.txt; kept src/k3.txt" + hint, error, 236]
    # Narrower: first names, the hint, the others' counts, then more names.
    assert editor.lua(ending, 126, 2, 12, 3)[0] == (
        "review done: 2 not applied (new1.py, new2.py); 12 deleted on disk (d1.txt, d2.txt,"
        " +10 more); kept 3 files" + hint)
    assert editor.lua(ending, 59, 0, 30, 0) == [
        "review done: 30 deleted on disk (d1.txt, d2.txt, +28 more)", warn, 58]
    assert editor.lua(ending, 46, 5, 30, 0)[0] == "review done: 5 not applied; 30 deleted on disk"
    text, level, width = editor.lua(ending, 30, 5, 30, 0)
    assert (text, level, width) == ("review done: 5 not applied; 3…", error, 30)
    assert editor.lua(ending, 80, 0, 0, 2) == [
        "review done: kept src/k1.txt; kept src/k2.txt", info, 45]  # the headline, whole


def test_a_file_not_applied_while_the_review_goes_on_is_told_at_once(
        editor: Editor, project: Path) -> None:
    """Keeping one created file that cannot be written, from the list, while another change is
    pending: one message says so at once (cut to the screen), the review goes on; at its end
    the one closing message counts it (ERROR), and the answer is as before."""
    (project / "src" / "gone01.txt").write_text("line 1\nline 2\nline 3\n")
    (project / "src" / "blocker.txt").write_text("a file, not a folder\n")
    editor.lua("_G.notes = {} local notify = vim.notify vim.notify = function(m, l, o)"
               " table.insert(_G.notes, {m, l}) return notify(m, l, o) end")
    editor.lua(GONE, str(project), 1, 1, "one of each")
    wait_review(editor)
    list_win = editor.lua("for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
                          " if vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w))"
                          ":find('agentls://review') then return w end end")
    rows = editor.lua("return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(...), 0, -1,"
                      " false)", list_win)
    row = next(i for i, line in enumerate(rows) if "new01.txt (created)" in line) + 1
    editor.lua("vim.api.nvim_set_current_win(...) vim.api.nvim_win_set_cursor(0, {"
               + str(row) + ", 0})", list_win)
    keys(editor, "ga")
    notes = editor.lua("return _G.notes")
    failed = [n for n in notes if "could not apply" in n[0]]
    assert len(failed) == 1 and failed[0][1] == 4, notes  # vim.log.levels.ERROR
    assert failed[0][0].startswith("AgentLS: could not apply src/blocker.txt/new01.txt: "), notes
    assert len(failed[0][0]) <= editor.lua("return vim.v.echospace"), notes
    assert editor.lua("return _G.gone_answer") is None  # the review goes on
    assert editor.lua(STATE) is not None

    keys(editor, "gA")
    editor.wait("the answer", lambda: editor.lua("return _G.gone_answer") is not None)
    assert editor.lua("return _G.gone_answer") == {
        "applied": False,
        "failureReason": "kept src/gone01.txt; failed created src/blocker.txt/new01.txt"}
    notes = editor.lua("return _G.notes")
    assert len([n for n in notes if "could not apply" in n[0]]) == 1, notes
    # 80 columns: the kept file's outcome does not fit beside the hint (it is in the list).
    assert notes[-1] == ["AgentLS: review done: 1 not applied (new01.txt) (:AgentReview list)",
                         4], notes
