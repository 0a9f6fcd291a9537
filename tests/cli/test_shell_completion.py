"""`agentls --completion SHELL`: scripts generated from the parser, tried in the real shells."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def script(shell: str) -> str:
    done = subprocess.run([sys.executable, "-P", "-m", "agentls", "--completion", shell],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


BASH_COMPLETE = """
source "$1"
line="$2"
read -ra COMP_WORDS <<< "$line"
[[ "$line" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE="$line"; COMP_POINT=${#line}; COMPREPLY=()
_shtab_agentls
printf '%s\\n' "${COMPREPLY[@]}"
"""


def bash_complete(path: Path, line: str) -> list[str]:
    done = subprocess.run(["bash", "-c", BASH_COMPLETE, "bash", str(path), line],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_commands_actions_and_options(tmp_path: Path) -> None:
    path = tmp_path / "agentls.bash"
    path.write_text(script("bash"))
    assert bash_complete(path, "agentls con") == ["config"]
    assert set(bash_complete(path, "agentls config ")) == {"get", "set", "list", "path",
                                                            "reset"}
    assert bash_complete(path, "agentls run --dr") == ["--dry-run"]
    assert bash_complete(path, "agentls --completion ") == ["bash", "zsh", "fish"]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes_commands(tmp_path: Path) -> None:
    path = tmp_path / "agentls.fish"
    path.write_text(script("fish"))
    done = subprocess.run(["fish", "--no-config", "-c",
                           f"source {path}; complete -C 'agentls config '"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    offered = {line.split("\t")[0] for line in done.stdout.splitlines()}
    assert {"get", "set", "list", "path", "reset"} <= offered


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_registers_the_completion_function(tmp_path: Path) -> None:
    (tmp_path / "_agentls").write_text(script("zsh"))
    assert subprocess.run(["zsh", "-n", str(tmp_path / "_agentls")],
                          capture_output=True, timeout=60, check=False).returncode == 0
    done = subprocess.run(
        ["zsh", "-f", "-c", f"fpath=({tmp_path} $fpath); autoload -U compinit; "
         f"compinit -u -d {tmp_path}/zcompdump; print -r -- ${{_comps[agentls]}}"],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.strip() == "_agentls", done.stderr


def test_an_unknown_shell_is_a_usage_error() -> None:
    done = subprocess.run([sys.executable, "-P", "-m", "agentls", "--completion", "csh"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 64 and "bash" in done.stderr
