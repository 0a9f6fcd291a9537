"""`agentls serve` started by a person in a terminal: one line saying what it is, Ctrl-C quits."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

from agentls.cli.serve_cmd import TTY_NOTICE


def read_until(fd: int, wanted: bytes, limit_s: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + limit_s
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    return seen


def test_in_a_terminal_it_says_what_it_is_and_ctrl_c_quits() -> None:
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdin, stdout and stderr are the pseudo-terminal
        os.execv(sys.executable, [sys.executable, "-P", "-m", "agentls", "serve"])
    try:
        shown = read_until(fd, b"Ctrl-C quits.\r\n", 60)
        assert b"speaks the Language Server Protocol on stdin/stdout" in shown
        assert shown.count(b"\n") == 1  # one line
        os.write(fd, b"\x03")  # the terminal turns it into SIGINT for the foreground process
        after = read_until(fd, b"stopped", 30)
        status = None
        deadline = time.monotonic() + 30
        while status is None and time.monotonic() < deadline:
            done, code = os.waitpid(pid, os.WNOHANG)
            status = code if done else None
            time.sleep(0.1)
        assert status is not None, "agentls serve did not stop on Ctrl-C"
        assert os.waitstatus_to_exitcode(status) == 0
        assert b"stopped" in after and b"Traceback" not in after
    finally:
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)


def test_started_by_an_editor_it_prints_nothing_but_protocol() -> None:
    done = subprocess.run([sys.executable, "-P", "-m", "agentls", "serve"],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False)
    assert TTY_NOTICE.encode() not in done.stderr
    assert done.stdout == b""
