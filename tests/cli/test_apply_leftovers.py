"""Files of an apply killed midway (kill -9 of a real apply): removed on the next start when
their writer is dead (only ours, named in its journal), kept out of `git status` meanwhile; the
start reads the journals, never walks the workspace."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.cli.headless_helpers import agentls, call, fix_add_steps

from agentls.devtools.replay.command import ReplayServer
from agentls.workspace.apply_leftovers import SUFFIXES, WriteJournal, clean_stale, journal_dir
from agentls.workspace.changeset import ChangeSet

# A real apply through the real writer, stopped for good after staging every file and
# replacing the first: then killed with SIGKILL, as a crash or `kill -9` would.
KILLED_APPLY = """
import os, sys, time
from pathlib import Path
from agentls.workspace.changeset import ChangeSet

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
    fixed = (project / "src" / "calc.py").read_text()
    assert "return a + b\n" in fixed
    assert "# changed" not in fixed  # the killed apply's one replaced file was put back first
    assert (project / "src" / "main.py").read_text() == "print('main')\n"
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


# Loaded by the real `agentls run` through PYTHONPATH: the first file swapped into the new
# folder stalls the write for good (after every file is staged there), so the test can kill
# the process at that moment.
STALL_SITECUSTOMIZE = """
import os, time
_real_replace = os.replace
def _stall(src, dst, *args, **kwargs):
    if os.sep + "generated" + os.sep in os.fspath(dst):
        open(os.environ["AGENTLS_TEST_STALLED"], "w").close()
        time.sleep(600)
    return _real_replace(src, dst, *args, **kwargs)
os.replace = _stall
"""


def test_agentls_run_killed_mid_write_leaves_no_new_folder_after_the_next_start(
        server: ReplayServer, env: dict[str, str], project: Path, tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(STALL_SITECUSTOMIZE)
    stalled = tmp_path / "stalled"
    server.load({"steps": [
        {"match": {"user": "generate", "tool_results": False}, "reply": {"tool_calls": [
            call("write_file", "w1", path="generated/deep/a.py", content="A = 1\n"),
            call("write_file", "w2", path="generated/deep/b.py", content="B = 2\n")]}},
        {"match": {"user": "generate", "tool": "write_file"}, "reply": {"text": "Written."}},
        *fix_add_steps(),
    ]})
    killed_env = {**env, "AGENTLS_TEST_STALLED": str(stalled),
                  "PYTHONPATH": os.pathsep.join([str(hooks), env.get("PYTHONPATH", "")])}
    run = subprocess.Popen([sys.executable, "-P", "-m", "agentls", "run", "-p",
                            "generate the files", "--cwd", str(project), "--yes"], env=killed_env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not stalled.exists():
            assert run.poll() is None, "agentls run ended before its write stalled"
            assert time.monotonic() < deadline, "agentls run never reached its write"
            time.sleep(0.05)
        run.send_signal(signal.SIGKILL)  # mid-write: the new folders exist, nothing swapped
        run.wait(timeout=10)
    finally:
        if run.poll() is None:
            run.kill()
    staged = [p.name for p in (project / "generated" / "deep").iterdir()]
    assert staged and all(name.endswith(".agentls-tmp") for name in staged), staged

    done = agentls("run", "-p", "fix add", "--cwd", str(project), "--yes", env=env)

    assert done.returncode == 0, done.stderr
    assert not (project / "generated").exists()  # all or nothing includes the folders
    assert list(journal_dir().glob("*.list")) == []


def test_a_folder_a_dead_apply_made_stays_when_something_else_is_in_it(
        tmp_path: Path) -> None:
    made = tmp_path / "new"
    dead = 2 ** 22 + 17  # above pid_max's default: no such process
    journal = journal_dir()
    journal.mkdir(parents=True, exist_ok=True)
    (journal / f"{dead}-00000000.list").write_text(
        f"dir:{made}\ndir:{made / 'inner'}\ndir:{tmp_path / 'never-made'}\n")
    (made / "inner").mkdir(parents=True)
    (made / "kept.txt").write_text("someone else's\n")
    removed = clean_stale()
    assert removed == [made / "inner"]
    assert (made / "kept.txt").exists() and list(journal.glob("*.list")) == []


# Loaded by the real `agentls run` through PYTHONPATH: after two of the ChangeSet's files are
# in place, the write stalls for good, so the test can kill it there.
STALL_AFTER_TWO = """
import os, time
_real_replace = os.replace
_done = []
def _stall(src, dst, *args, **kwargs):
    result = _real_replace(src, dst, *args, **kwargs)
    if os.fspath(src).endswith(".agentls-tmp"):
        _done.append(dst)
        if len(_done) == 2:
            open(os.environ["AGENTLS_TEST_STALLED"], "w").close()
            time.sleep(600)
    return result
os.replace = _stall
"""


def test_agentls_run_killed_mid_swap_is_undone_at_the_next_start(
        server: ReplayServer, env: dict[str, str], project: Path, tmp_path: Path) -> None:
    (project / "src" / "main.py").write_text("print('main')\n")
    (project / "src" / "util.py").write_text("X = 1\n")
    before = {p.name: p.read_bytes() for p in (project / "src").iterdir()}
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(STALL_AFTER_TWO)
    stalled = tmp_path / "stalled"
    server.load({"steps": [
        {"match": {"user": "rewrite", "tool_results": False}, "reply": {"tool_calls": [
            call("write_file", "w1", path="src/calc.py", content="CALC = 'new'\n",
                 mode="overwrite"),
            call("write_file", "w2", path="src/new_module.py", content="NEW = 1\n"),
            call("write_file", "w3", path="src/util.py", content="X = 2\n",
                 mode="overwrite")]}},
        {"match": {"user": "rewrite", "tool": "write_file"}, "reply": {"text": "Rewritten."}},
        {"match": {"user": "hello"}, "reply": {"text": "Hello."}},
    ]})
    killed_env = {**env, "AGENTLS_TEST_STALLED": str(stalled),
                  "PYTHONPATH": os.pathsep.join([str(hooks), env.get("PYTHONPATH", "")])}
    run = subprocess.Popen([sys.executable, "-P", "-m", "agentls", "run", "-p", "rewrite them",
                            "--cwd", str(project), "--yes"], env=killed_env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not stalled.exists():
            assert run.poll() is None, "agentls run ended before its write stalled"
            assert time.monotonic() < deadline, "agentls run never reached its write"
            time.sleep(0.05)
        run.send_signal(signal.SIGKILL)  # two of the three files in place
        run.wait(timeout=10)
    finally:
        if run.poll() is None:
            run.kill()
    half = {p.name: p.read_bytes() for p in (project / "src").iterdir()
            if not p.name.endswith(SUFFIXES)}
    assert half != before  # the moment: part of the ChangeSet is on disk

    done = agentls("run", "-p", "hello", "--cwd", str(project), "--yes", env=env)

    assert done.returncode == 0, done.stderr
    after = {p.name: p.read_bytes() for p in (project / "src").iterdir()}
    assert after == before  # all or nothing: nothing of the killed write is left
    assert list(journal_dir().glob("*.list")) == []


def test_the_undo_leaves_a_file_changed_since_and_a_finished_apply_alone(
        tmp_path: Path) -> None:
    import hashlib
    import json

    dead = 2 ** 22 + 19  # above pid_max's default: no such process
    journal = journal_dir()
    journal.mkdir(parents=True, exist_ok=True)
    edited, kept = tmp_path / "edited.py", tmp_path / "kept.py"
    edited.write_text("the person's edit after the crash\n")
    kept.write_text("written\n")
    written = hashlib.sha256(b"written\n").hexdigest()
    backup = tmp_path / f".edited.py.{dead}-00000000.agentls-bak"
    backup.write_text("before\n")
    os.utime(backup, (1_000_000_000, 1_000_000_000))  # older than this process, as a dead one's
    (journal / f"{dead}-00000001.list").write_text("\n".join([
        str(backup),
        json.dumps({"swap": str(edited), "backup": str(backup), "sha256": written}),
    ]) + "\n")
    (journal / f"{dead}-00000002.list").write_text("\n".join([
        json.dumps({"swap": str(kept), "backup": None, "sha256": written}),
        json.dumps({"done": True}),
    ]) + "\n")
    clean_stale()
    assert edited.read_text() == "the person's edit after the crash\n"  # not ours any more
    assert kept.read_text() == "written\n"  # that apply had finished: nothing to undo
    assert not backup.exists() and list(journal.glob("*.list")) == []
