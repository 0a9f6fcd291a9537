"""`agentls run` / `loop` with an agent CLI as the backend, played by stand-in executables.

The stand-ins (tests/unit/llm/standin_agent_cli.py) print what codex and Claude Code print
and edit the workspace themselves; AgentLS reports their changes from git.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.cli.headless_helpers import SECRET, agentls, last_json, write
from tests.unit.llm import standin_agent_cli as standins

pytestmark = pytest.mark.skipif(os.name == "nt", reason="stand-ins are POSIX scripts")




@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    write(root / "calc.py", "def add(a, b):\n    return a - b\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], cwd=root, check=True)
    return root


def cli_env(bin_dir: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "OPENAI_API_KEY": SECRET}


def test_run_through_codex_reports_the_files_it_wrote(repo: Path, tmp_path: Path) -> None:
    bin_dir = standins.install_standins(tmp_path / "bin", {"codex": "ok"})
    prompt = write(tmp_path / "p.txt", "fix add")
    done = agentls("run", str(prompt), "--backend", "codex", "--cwd", str(repo), "--json",
                   env=cli_env(bin_dir))
    assert done.returncode == 0, done.stderr
    result = last_json(done.stdout)
    assert result["backend"] == "codex" and result["stopReason"] == "done"
    assert {c["path"]: c["status"] for c in result["changes"]} == {
        "NOTES.md": "added", "calc.py": "modified"}
    assert result["applied"] is True and "wrote these changes itself" in result["changesNote"]
    assert "Fixed add() in calc.py." in result["text"]
    call = standins.calls(bin_dir)[-1]
    assert SECRET not in json.dumps(call["env"])  # our keys never reach the CLI


def test_loop_through_claude_reads_the_done_marker(repo: Path, tmp_path: Path) -> None:
    bin_dir = standins.install_standins(tmp_path / "bin", {"claude": "ok"})
    task = write(tmp_path / "t.md", "fix add")
    done = agentls("loop", str(task), "--backend", "claude", "--cwd", str(repo), "--json",
                   env=cli_env(bin_dir))
    assert done.returncode == 0, done.stderr
    result = last_json(done.stdout)
    assert len(result["iterations"]) == 1 and result["completion"]["status"] == "done"
    assert (repo / "calc.py").read_text().endswith("a + b\n")


def test_unauthenticated_cli_exit_2_and_dry_run_refused(repo: Path, tmp_path: Path) -> None:
    bin_dir = standins.install_standins(tmp_path / "bin", {"codex": "unauthenticated"})
    prompt = write(tmp_path / "p.txt", "fix add")
    env = cli_env(bin_dir)
    done = agentls("run", str(prompt), "--backend", "codex", "--cwd", str(repo), env=env)
    assert done.returncode == 2, done.stderr
    dry = agentls("run", str(prompt), "--backend", "codex", "--dry-run", "--cwd", str(repo),
                  env=env)
    assert dry.returncode == 64 and "edits files itself" in dry.stderr
