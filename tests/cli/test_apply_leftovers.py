"""Files of an apply killed midway: removed on the next start when their writer is dead (only
ours, only older than this run), and kept out of `git status` meanwhile."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cli.headless_helpers import agentls, fix_add_steps

from agentls.devtools.replay import ReplayServer


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def _git(project: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=project, capture_output=True, text=True,
                          check=True).stdout


def test_stale_leftovers_go_live_ones_stay_and_git_status_never_shows_them(
        server: ReplayServer, env: dict[str, str], project: Path) -> None:
    _git(project, "init", "-q")
    _git(project, "add", ".")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    src = project / "src"
    stale_tmp = src / f".calc.py.{_dead_pid()}-0a1b2c3d.agentls-tmp"
    stale_bak = src / f".calc.py.{_dead_pid()}-0a1b2c3e.agentls-bak"
    live = src / f".calc.py.{os.getpid()}-0a1b2c3f.agentls-tmp"  # a concurrent apply's
    other = src / ".calc.py.agentls-tmp-notes"  # not ours: no pid, other suffix
    for path in (stale_tmp, stale_bak, live, other):
        path.write_text("half-written\n")
        os.utime(path, (1_000_000_000, 1_000_000_000))
    server.load({"steps": fix_add_steps()})
    done = agentls("run", "-p", "fix add", "--cwd", str(project), "--yes", env=env)
    assert done.returncode == 0, done.stderr
    assert (src / "calc.py").read_text().endswith("return a + b\n")
    assert not stale_tmp.exists() and not stale_bak.exists()
    assert live.exists() and other.exists()
    status = _git(project, "status", "--porcelain", "--untracked-files=all")
    assert "agentls-tmp\n" not in status and live.name not in status, status
    assert other.name in status  # only our suffixes are hidden
    assert "*.agentls-tmp" in (project / ".git" / "info" / "exclude").read_text()
