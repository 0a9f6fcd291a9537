"""A server that stops unasked is started again (0.5, 1, 2, 4 s), then left stopped with a
message saying where to look; ``:AgentRestart`` restarts on purpose. Real headless Neovim,
the real server (its process killed with SIGKILL, as a crash would end it), the scripted
model."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import options_for
from tests.nvim.conftest import Editor, isolate, start_editor

ATTACHED = ("local c = vim.lsp.get_clients({name='agentls', bufnr=...})[1]"
            " return c ~= nil and c.initialized")
# Every vim.notify the plugin (and Neovim) gives, kept for the assertions.
CAPTURE_NOTES = ("_G.notes = {} vim.notify = function(m, l) "
                 "table.insert(_G.notes, m) end")


@pytest.fixture
def pids(tmp_path: Path) -> Path:
    return tmp_path / "server-pids"


@pytest.fixture
def watched(tmp_path: Path, project: Path, model: ReplayServer, pids: Path,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    """An editor whose server command writes each server's pid to ``pids`` first."""
    isolate(monkeypatch, tmp_path, project)
    cmd = ["sh", "-c", f'echo $$ >> "{pids}"; exec "$@"', "sh",
           sys.executable, "-P", "-m", "agentls", "serve"]
    ed = start_editor(tmp_path, project, options_for(model), cmd=cmd)
    ed.lua(CAPTURE_NOTES)
    try:
        yield ed
    finally:
        with contextlib.suppress(Exception):
            ed.nvim.command("qa!")
        ed.nvim.close()


def started(pids: Path) -> list[int]:
    return [int(p) for p in pids.read_text().split()] if pids.exists() else []


def notes(ed: Editor) -> list[str]:
    return [str(n) for n in ed.lua("return _G.notes")]


def clients_of(ed: Editor, bufnr: int) -> int:
    return int(ed.lua("return #vim.lsp.get_clients({name='agentls', bufnr=...})", bufnr))


def answers(ed: Editor, bufnr: int) -> Any:
    """The new server answers a request (the session list)."""
    return ed.lua("local r = vim.lsp.buf_request_sync(..., 'agentls/sessions', {}, 10000) "
                  "return r ~= nil and next(r) ~= nil", bufnr)


def test_a_killed_server_is_started_again_and_the_file_reattached(
        watched: Editor, pids: Path) -> None:
    bufnr = watched.open("src/calc.py")
    (first,) = started(pids)
    os.kill(first, signal.SIGKILL)
    watched.wait("a second server", lambda: len(started(pids)) == 2)
    watched.wait("it to attach the open file", lambda: watched.lua(ATTACHED, bufnr))
    assert answers(watched, bufnr)
    said = notes(watched)
    assert "AgentLS: the server stopped (signal 9); starting it again in 0.5 s (1 of 4)" in said


def test_after_four_restarts_close_together_it_is_left_stopped_until_agentrestart(
        watched: Editor, pids: Path) -> None:
    bufnr = watched.open("src/calc.py")
    for count in range(1, 6):
        watched.wait(f"server {count} to attach", lambda: watched.lua(ATTACHED, bufnr))
        os.kill(started(pids)[-1], signal.SIGKILL)
        if count < 5:
            watched.wait(f"server {count + 1}", lambda c=count: len(started(pids)) == c + 1)
    watched.wait("the message that it is left stopped",
                 lambda: any("left stopped" in n for n in notes(watched)))
    said = notes(watched)
    waits = [n for n in said if "starting it again" in n]
    assert [w.split(" in ")[1] for w in waits] == [
        "0.5 s (1 of 4)", "1.0 s (2 of 4)", "2.0 s (3 of 4)", "4.0 s (4 of 4)"]
    (given_up,) = [n for n in said if "left stopped" in n]
    assert given_up.startswith("AgentLS: the server stopped 5 times in 3 minutes (last: "
                               "signal 9) and is left stopped. See :checkhealth agentls")
    assert given_up.endswith(", then :AgentRestart")
    time.sleep(1.0)
    assert len(started(pids)) == 5 and not watched.lua(ATTACHED, bufnr)

    watched.nvim.command("AgentRestart")
    watched.wait("a server started on purpose", lambda: len(started(pids)) == 6)
    watched.wait("it to attach the open file", lambda: watched.lua(ATTACHED, bufnr))
    assert answers(watched, bufnr)
    assert "AgentLS: starting the server again" in notes(watched)


def test_agentrestart_replaces_a_running_server_without_counting_a_stop(
        watched: Editor, pids: Path) -> None:
    bufnr = watched.open("src/calc.py")
    watched.nvim.command("AgentRestart")
    watched.wait("a second server", lambda: len(started(pids)) == 2)
    watched.wait("it to attach the open file", lambda: watched.lua(ATTACHED, bufnr))
    # The old client is gone before the new one starts (a request to both would wait for
    # an answer the old one never sends).
    assert clients_of(watched, bufnr) == 1
    assert answers(watched, bufnr)
    said = notes(watched)
    assert "AgentLS: starting the server again" in said
    assert not any("stopped" in n for n in said)  # asked: no restart message, no warning
    first = started(pids)[0]
    watched.wait(f"the first server ({first}) to exit", lambda: not running(first))


def running(pid: int) -> bool:
    """Whether ``pid`` still runs (an exited process its parent has not reaped yet does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_the_back_off_forgets_stops_older_than_three_minutes(watched: Editor) -> None:
    decisions = watched.lua("""
      local r = require("agentls.restarts")
      local stops, out = {}, {}
      for _, t in ipairs({0, 1000, 2000, 3000, 4000}) do
        local d = r.on_stop(stops, t)
        table.insert(out, d.restart and d.delay_ms or -d.stops)
      end
      table.insert(out, r.on_stop(stops, 4000 + r.WINDOW_MS + 1).delay_ms)
      return out
    """)
    assert decisions == [500, 1000, 2000, 4000, -5, 500]
