"""One run per session across processes: a second `agentls run --session S` fails with
"session busy" (exit 69), or with --wait waits, says so, and runs after the first."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.headless_helpers import agentls, last_json

from agentls.cli import exitcodes
from agentls.devtools.replay.command import ReplayServer


def _start(project: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-P", "-m", "agentls", "run", *args, "--cwd",
                             str(project), "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def _held(project: Path, session: str) -> None:
    lock = project / ".agentls" / "locks" / f"{session}.lock"
    deadline = time.monotonic() + 30
    while not (lock.exists() and lock.read_text().strip()):
        assert time.monotonic() < deadline, "the first run never took the session"
        time.sleep(0.05)


def test_a_second_run_on_a_busy_session_fails_or_waits(
        server: ReplayServer, env: dict[str, str], project: Path) -> None:
    server.load({"steps": [{"match": {"user": "first"}, "reply": {"text": "hello"}},
                           {"match": {"user": "slow"}, "reply": {
                               "text": "slow answer", "first_delay_s": 12}},
                           {"match": {"user": "queued"}, "reply": {"text": "after you"}}]})
    first = agentls("run", "-p", "first", "--cwd", str(project), "--json", env=env)
    session = last_json(first.stdout)["sessionId"]
    slow = _start(project, env, "-p", "slow", "--session", session)
    _held(project, session)
    busy = agentls("run", "-p", "busy", "--session", session, "--cwd", str(project),
                   "--json", env=env)
    assert busy.returncode == exitcodes.SESSION_BUSY, busy.stderr
    assert "session busy" in last_json(busy.stdout)["error"]["message"]
    waiting = _start(project, env, "-p", "queued", "--session", session, "--wait")
    out, err = waiting.communicate(timeout=60)
    slow_out, _ = slow.communicate(timeout=60)
    assert waiting.returncode == 0 and slow.returncode == 0, err
    assert "waiting for session" in err
    assert json.loads(out)["text"] == "after you" and json.loads(slow_out)["text"] == "slow answer"
