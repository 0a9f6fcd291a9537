"""Which servers apply: configured over detected, known names inheriting their fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentls.langservers import specs as specs_module
from agentls.langservers.specs import resolve
from agentls.settings.models import LangServerConfig, LspConfig


@pytest.fixture(autouse=True)
def _no_own_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the PATH each test gives: not the venv's basedpyright and ruff."""
    monkeypatch.setattr(specs_module, "own_bin", lambda: str(tmp_path / "nothing"))


def _on_path(tmp_path: Path, *names: str) -> dict[str, str]:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name in names:
        program = folder / name
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
    return {"PATH": str(folder)}


def test_known_servers_on_path_are_detected_when_their_markers_are_there(
        tmp_path: Path) -> None:
    env = _on_path(tmp_path, "pyright-langserver", "gopls")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("")
    specs, notes = resolve(LspConfig(), [root], env)
    assert [s.name for s in specs] == ["pyright"]  # no go.mod: gopls does not apply
    assert specs[0].detected and specs[0].serves(root / "x.py")
    assert not specs[0].serves(root / "x.go") and notes == []
    assert resolve(LspConfig(detect=False), [root], env)[0] == []


def test_basedpyright_found_means_pyright_is_not_started_beside_it(tmp_path: Path) -> None:
    env = _on_path(tmp_path, "pyright-langserver", "basedpyright-langserver")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "setup.py").write_text("")
    assert [s.name for s in resolve(LspConfig(), [root], env)[0]] == ["basedpyright"]


def test_a_configured_known_name_keeps_its_defaults_and_overrides_what_is_set(
        tmp_path: Path) -> None:
    env = _on_path(tmp_path)
    config = LspConfig(servers={"clangd": LangServerConfig(args=["--log=error"],
                                                           root_markers=[])})
    [spec], _ = resolve(config, [tmp_path], env)
    assert (spec.command, spec.args, spec.detected) == ("clangd", ("--log=error",), False)
    assert spec.serves(tmp_path / "a.cpp")


def test_an_unknown_server_without_command_or_files_is_named_not_started(
        tmp_path: Path) -> None:
    config = LspConfig(detect=False, servers={
        "mine": LangServerConfig(), "zls": LangServerConfig(command="zls"),
        "off": LangServerConfig(command="x", globs=["*.x"], enabled=False)})
    specs, notes = resolve(config, [tmp_path], {"PATH": ""})
    assert specs == []
    assert any("lsp.servers.mine has no command" in n for n in notes)
    assert any("lsp.servers.zls serves no file" in n for n in notes)
