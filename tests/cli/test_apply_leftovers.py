"""Files of an apply killed midway (kill -9 of a real apply): removed on the next start when
their writer is dead (only ours, named in its journal), kept out of `git status` meanwhile; the
start reads the journals, never walks the workspace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli.headless_helpers import agentls, fix_add_steps

from agentls.devtools.replay import ReplayServer
from agentls.tools.apply_leftovers import SUFFIXES, WriteJournal, clean_stale, journal_dir
from agentls.tools.changeset import ChangeSet

# A real apply through the real writer, stopped for good after staging every file and
# replacing the first: then killed with SIGKILL, as a crash or `kill -9` would.
KILLED_APPLY = """
import os, sys, time
from pathlib import Path
from agentls.tools.changeset import ChangeSet

root = Path(sys.argv[1])
changes = ChangeSet()
for name in ("calc.py", "main.py"):
    path = root / "src" / name
    changes.write(path, path.read_text() + "# changed\\n")
real_replace = os.replace
replaced = []
def stall(src, dst):
    real_replace(src, dst)
    replaced.append(dst)
    if len(replaced) == 1:
        print("stalled", flush=True)
        time.sleep(600)
os.replace = stall
changes.apply_to_disk()
"""


def _kill_mid_apply(project: Path) -> None:
    writer = subprocess.Popen([sys.executable, "-c", KILLED_APPLY, str(project)],
                              stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdout.readline().strip() == "stalled"
    writer.kill()  # SIGKILL: no finally, no clean-up of its own
    writer.wait(timeout=10)


def _git(project: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=project, capture_output=True, text=True,
                          check=True).stdout


def _leftovers(project: Path) -> list[Path]:
    return sorted(p for p in (project / "src").iterdir() if p.name.endswith(SUFFIXES))


def test_a_killed_apply_s_files_go_at_the_next_start_and_git_status_never_shows_them(
        server: ReplayServer, env: dict[str, str], project: Path) -> None:
    (project / "src" / "main.py").write_text("print('main')\n")
    _git(project, "init", "-q")
    _git(project, "add", ".")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    _kill_mid_apply(project)
    left = _leftovers(project)
    assert {p.name.rsplit(".", 1)[1] for p in left} == {"agentls-tmp", "agentls-bak"}, left
    [journal] = list(journal_dir().glob("*.list"))
    assert {Path(line) for line in journal.read_text().splitlines()} >= set(left)
    status = _git(project, "status", "--porcelain", "--untracked-files=all")
    assert "agentls-" not in status, status  # hidden from git meanwhile
    other = project / "src" / ".calc.py.agentls-tmp-notes"  # not ours: no pid, other suffix
    other.write_text("mine\n")

    server.load({"steps": fix_add_steps()})
    done = agentls("run", "-p", "fix add", "--cwd", str(project), "--yes", env=env)

    assert done.returncode == 0, done.stderr
    assert "return a + b\n" in (project / "src" / "calc.py").read_text()
    assert _leftovers(project) == [] and other.exists()
    assert list(journal_dir().glob("*.list")) == []


def test_a_live_writer_s_files_stay_and_a_finished_apply_leaves_no_journal(
        tmp_path: Path) -> None:
    journal = WriteJournal()
    mine = tmp_path / f".a.py.{os.getpid()}-0a1b2c3d.agentls-tmp"
    journal.record(mine)
    mine.write_text("half\n")
    assert clean_stale() == [] and mine.exists()  # this process is alive
    journal.close()
    assert list(journal_dir().glob("*.list")) == []

    target = tmp_path / "b.py"
    changes = ChangeSet()
    changes.write(target, "x = 1\n")
    changes.apply_to_disk()
    assert target.read_text() == "x = 1\n" and list(journal_dir().glob("*.list")) == []


def test_the_start_reads_journals_not_the_tree(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[str] = []
    monkeypatch.setattr(os, "walk", lambda *a, **k: walked.append("walk") or iter(()))
    for i in range(3):
        (tmp_path / f"d{i}").mkdir()
    clean_stale()
    assert walked == []
