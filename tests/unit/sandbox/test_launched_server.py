"""What a launched server (MCP, language server) may see: its environment and its direct
command line (the sandboxed one runs in tests/unit/tools/mcp_client and
tests/unit/langservers, under bwrap)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentls.policy.redaction import add_secrets, forget_secrets
from agentls.sandbox.bwrap import SandboxSettings
from agentls.sandbox.launched_server import (
    SANDBOX_HOME,
    LaunchError,
    direct_argv,
    sandboxed_argv,
    server_environment,
)

ENVIRON = {"PATH": "/usr/bin", "HOME": "/home/me", "TMPDIR": "/tmp/me", "LANG": "C.UTF-8",
           "OPENAI_API_KEY": "sk-the-key", "COPY_OF_KEY": "sk-the-key", "MINE": "x",
           "OTHER": "y"}


def test_the_key_never_reaches_the_server_under_any_name() -> None:
    add_secrets(["sk-a-configured-secret"])
    try:
        env = server_environment(ENVIRON, "OPENAI_API_KEY", sandboxed=True,
                                 names=["MINE", "COPY_OF_KEY", "OPENAI_API_KEY"],
                                 given={"GIVEN": "1", "ALSO_KEY": "sk-the-key",
                                        "TOKEN": "sk-a-configured-secret"})
    finally:
        forget_secrets()
    assert "sk-the-key" not in env.values() and "TOKEN" not in env
    assert env["MINE"] == "x" and env["GIVEN"] == "1" and "OTHER" not in env
    assert env["LANG"] == "C.UTF-8" and env["PATH"] == "/usr/bin"
    assert env["HOME"] == SANDBOX_HOME  # private inside the sandbox


def test_run_directly_it_keeps_the_persons_home_and_dies_with_agentls() -> None:
    env = server_environment(ENVIRON, None, sandboxed=False)
    assert (env["HOME"], env["TMPDIR"]) == ("/home/me", "/tmp/me")
    argv = direct_argv(["server", "--stdio"])
    assert argv[-2:] == ["server", "--stdio"]
    if shutil.which("setpriv"):
        assert argv[:4] == [shutil.which("setpriv"), "--pdeathsig", "KILL", "--"]


def test_a_view_that_cannot_be_made_is_a_launch_error_and_leaves_no_folder(
        tmp_path: Path) -> None:
    made: list[Path] = []

    def view(folder: Path) -> list[object]:
        made.append(folder)
        raise OSError("no space left")

    with pytest.raises(LaunchError, match=r"could not prepare the sandbox's view.*no space"):
        sandboxed_argv("bwrap", SandboxSettings(), tmp_path, {"PATH": "/usr/bin"}, ["s"],
                       ENVIRON, prefix="agentls-test-", view=view)  # type: ignore[arg-type]
    assert made and not made[0].exists()
