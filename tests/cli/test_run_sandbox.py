"""`agentls run` with the sandbox: shell writes in the dry run's diff, and a kill -9 of the
agent leaves no process of the command behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.cli.headless_helpers import agentls, call

from agentls.devtools.replay.command import ReplayServer
from agentls.sandbox.bwrap import probe

pytestmark = pytest.mark.skipif(not probe().available, reason="no sandbox here")


def shell_run(command: str) -> dict[str, object]:
    return {"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("shell_exec", "s1", command=command, timeout=120)]}},
        {"match": {"tool": "shell_exec"}, "reply": {"text": "ran it"}},
    ]}


def test_dry_run_diff_shows_shell_writes_not_caches(
        server: ReplayServer, env: dict[str, str], project: Path, tmp_path: Path) -> None:
    (project / "test_calc.py").write_text("def test_one():\n    assert True\n")
    (project / ".gitignore").write_text("__pycache__/\n")
    server.load(shell_run(f"{sys.executable} -m pytest -q test_calc.py && "
                          "echo from-the-shell > notes.txt"))
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("make notes\n")
    done = agentls("run", str(prompt), "--cwd", str(project), "--dry-run", env=env)
    assert done.returncode == 0, done.stderr
    assert "+++ b/notes.txt\n" in done.stdout and "+from-the-shell\n" in done.stdout
    assert "pytest_cache" not in done.stdout and "__pycache__" not in done.stdout
    assert "dry run: 1 file not written" in done.stderr
    assert not (project / "notes.txt").exists()


def _processes_with(marker: str, *, program: str | None = None) -> list[int]:
    """Live processes whose command line holds ``marker`` (and whose argv[0] is
    ``program``, when given: bwrap's own command line holds the command too)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != b"Z" and (
                program is None or cmdline.split(b"\0", 1)[0] == program.encode()):
            found.append(int(entry))
    return found


def _gone_within(marker: str, seconds: float) -> float | None:
    """Seconds until no live process holds ``marker`` (None: still some after ``seconds``)."""
    started = time.monotonic()
    while _processes_with(marker):
        if time.monotonic() - started > seconds:
            return None
        time.sleep(0.002)
    return time.monotonic() - started


def test_kill_9_ends_the_command_within_100_ms_every_time(
        server: ReplayServer, env: dict[str, str], project: Path, tmp_path: Path) -> None:
    """Issue 38: 20 kills of `agentls run`, half while bwrap is still setting the sandbox up,
    half while the command runs: nothing of the command is alive 100 ms after the agent."""
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("wait\n")
    late: list[tuple[int, float | None]] = []
    for attempt in range(20):
        marker = f"{318 + attempt}.125"
        server.load(shell_run(f"sleep {marker} & sleep {marker}; echo late > late.txt"))
        agent = subprocess.Popen(
            [sys.executable, "-P", "-m", "agentls", "run", str(prompt), "--cwd", str(project)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            early = attempt % 2 == 0  # at the first sight of the sandbox, or once it runs
            while (not _processes_with(marker) if early
                   else len(_processes_with(marker, program="sleep")) < 2):
                assert time.monotonic() < deadline, "the command never started"
                assert agent.poll() is None, "agentls ended before running the command"
                time.sleep(0.001 if early else 0.02)
            agent.send_signal(signal.SIGKILL)
            agent.wait()
            late.append((attempt, _gone_within(marker, 0.1)))
        finally:
            if agent.poll() is None:
                agent.kill()
            for pid in _processes_with(marker):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    assert all(gone is not None for _, gone in late), [(a, g) for a, g in late if g is None]
    assert not (project / "late.txt").exists()


def test_kill_9_of_the_agent_kills_the_command(
        server: ReplayServer, env: dict[str, str], project: Path, tmp_path: Path) -> None:
    marker = "317.25"  # an unusual sleep length to find the command's processes by
    server.load(shell_run(f"sleep {marker} & sleep {marker}; echo late > late.txt"))
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("wait\n")
    agent = subprocess.Popen(
        [sys.executable, "-P", "-m", "agentls", "run", str(prompt), "--cwd", str(project)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        # Both sleeps running, so the sandbox is set up: bwrap's --die-with-parent has a
        # window of a few ms while it starts in which a killed parent is missed (see the
        # issue 17 note); what is checked here is the guarantee once the command runs.
        while len(_processes_with(marker, program="sleep")) < 2:
            assert time.monotonic() < deadline, "the command never started"
            assert agent.poll() is None, "agentls ended before running the command"
            time.sleep(0.1)
        agent.send_signal(signal.SIGKILL)
        agent.wait()
        time.sleep(1.0)
        assert _processes_with(marker) == []
        assert not (project / "late.txt").exists()
    finally:
        if agent.poll() is None:
            agent.kill()
        for pid in _processes_with(marker):
            os.kill(pid, signal.SIGKILL)
