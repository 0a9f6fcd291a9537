"""Fixtures for the language-server tests: a workspace, a pool, the fake server as a program."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from agentls.sandbox.bwrap import probe

FAKE = Path(__file__).with_name("fake_server.py")


def fake_program(tmp_path: Path) -> str:
    """The fake server as an executable of its own (shebang: this interpreter), in a bin/
    folder outside the repository, so the sandbox shows it wherever the checkout lives."""
    folder = tmp_path / "fake" / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "fake-ls"
    target.write_text(f"#!{sys.executable}\n" + FAKE.read_text(encoding="utf-8"),
                      encoding="utf-8")
    target.chmod(0o755)
    return str(target)


def basedpyright() -> str:
    found = shutil.which("basedpyright-langserver",
                         path=os.pathsep.join([os.environ.get("PATH", ""),
                                               os.path.dirname(sys.executable)]))
    if found is None:
        pytest.skip("basedpyright is not installed (make install puts it in the dev extra)")
    return found


@pytest.fixture
def sandboxed() -> None:
    status = probe()
    if not status.available:
        pytest.skip(f"no sandbox here: {status.describe()}")


NODE_SERVERS = Path(__file__).resolve().parents[2] / "langservers" / "node" / "node_modules"


def typescript_language_server() -> str:
    found = NODE_SERVERS / ".bin" / "typescript-language-server"
    if not found.exists():
        pytest.skip("typescript-language-server is not installed (make langservers installs it "
                    "from tests/langservers/node/package-lock.json)")
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH")
    return str(found)


def clangd() -> str:
    found = shutil.which("clangd")
    if found is None:
        pytest.skip("clangd is not installed (make langservers installs Debian's clangd with "
                    "apt where it can; it is optional)")
    return found
