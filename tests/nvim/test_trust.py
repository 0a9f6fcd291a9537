"""Project trust from Neovim: the plugin offers `vim.secure.read` on `.agentls/config.toml`
and passes the answer as `initializationOptions.workspaceTrusted`, as VS Code does. Real
headless Neovim (its trust list in a private XDG_STATE_HOME), the real server, the scripted
model; the person's answer to the prompt is `vim.fn.confirm`'s."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import options_for
from tests.nvim.conftest import Editor, start_editor

# The person's answer to vim.secure.read's prompt (1 ignore, 2 view, 3 deny, 4 allow); the
# prompts and every vim.notify are kept for the assertions (window/showMessage warnings go
# to :messages).
ANSWER = """
_G.prompts, _G.notes = {}, {}
vim.fn.confirm = function(msg) table.insert(_G.prompts, msg) return %d end
vim.notify = function(m) table.insert(_G.notes, m) end
"""
NOT_TRUSTED = "is not trusted"
SETTLE_S = 4.0  # after attaching, how long a warning would take to come (it comes in < 1 s)


@pytest.fixture
def trusting_project(project: Path) -> Path:
    (project / ".agentls").mkdir()
    (project / ".agentls" / "config.toml").write_text('[sandbox]\nmode = "off"\n')
    return project


@contextlib.contextmanager
def editor_answering(answer: int, tmp_path: Path, project: Path, model: ReplayServer,
                     monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AGENTLS_TRUST_WORKSPACE", raising=False)
    monkeypatch.chdir(project)
    ed = start_editor(tmp_path, project, options_for(model))
    ed.lua(ANSWER % answer)
    try:
        yield ed
    finally:
        with contextlib.suppress(Exception):
            ed.nvim.command("qa!")
        ed.nvim.close()


def warnings(ed: Editor) -> list[str]:
    """The server's trust warnings: Neovim echoes window/showMessage into :messages."""
    shown = [*ed.lua("return _G.notes"),
             *ed.lua("return vim.api.nvim_exec2('messages', {output = true}).output")
             .splitlines()]
    return [str(n) for n in shown if NOT_TRUSTED in str(n)]


def test_allowing_the_project_config_in_vim_secure_trusts_the_workspace(
        tmp_path: Path, trusting_project: Path, model: ReplayServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    with editor_answering(4, tmp_path, trusting_project, model, monkeypatch) as ed:
        ed.open("src/calc.py")
        prompts = ed.lua("return _G.prompts")
        assert len(prompts) == 1 and "config.toml is not trusted" in prompts[0]
        time.sleep(SETTLE_S)
        assert warnings(ed) == []  # the server counted the project file: no warning
        sent = ed.lua("return vim.lsp.get_clients({name='agentls'})[1].config.root_dir")
        assert Path(sent) == trusting_project
        # Neovim's own trust list now holds the file (by content): the next start asks nothing.
        trusted = ed.lua("return vim.secure.read(...)",
                         str(trusting_project / ".agentls" / "config.toml"))
        assert trusted == '[sandbox]\nmode = "off"\n'
        assert len(ed.lua("return _G.prompts")) == 1


def test_denying_it_keeps_the_server_s_warning(
        tmp_path: Path, trusting_project: Path, model: ReplayServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    with editor_answering(3, tmp_path, trusting_project, model, monkeypatch) as ed:
        ed.open("src/calc.py")
        assert len(ed.lua("return _G.prompts")) == 1
        shown = ed.wait("the server's trust warning", lambda: warnings(ed), timeout=30)
        assert "sandbox.mode" in shown[0] and "agentls trust" in shown[0]


def test_no_project_config_asks_nothing(tmp_path: Path, project: Path, model: ReplayServer,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    with editor_answering(4, tmp_path, project, model, monkeypatch) as ed:
        ed.open("src/calc.py")
        assert ed.lua("return _G.prompts") == []
