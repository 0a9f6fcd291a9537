"""Tests for server/agentls/cli/early_start.py: what `agentls run` starts before importing the
engine is done off the main thread, and is what the first request then uses."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest
from openai import _base_client


def test_the_openai_client_sends_the_platform_string(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the early platform call rests on: the client's request headers ask for
    platform.platform() (which runs `uname -p` the first time, on Linux and macOS)."""
    asked = []
    monkeypatch.setattr(platform, "platform", lambda *a, **k: asked.append(1) or "Linux-x")
    _base_client.get_platform()
    assert asked


@pytest.mark.skipif(sys.platform == "win32", reason="platform() runs no process on Windows")
def test_the_platform_string_is_asked_off_the_main_thread_and_kept(tmp_path: Path) -> None:
    code = (
        "import json, platform, sys, threading\n"
        "spawned = []\n"
        "def hook(event, args):\n"
        "    if event == 'subprocess.Popen':\n"
        "        spawned.append([threading.current_thread().name, list(map(str, args[1]))])\n"
        "sys.addaudithook(hook)\n"
        "from pathlib import Path\n"
        "from agentls.cli.early_start import start_early\n"
        f"start_early(Path({str(tmp_path)!r}))\n"
        "for thread in threading.enumerate():\n"
        "    if thread is not threading.main_thread():\n"
        "        thread.join()\n"
        "early = list(spawned)\n"
        "platform.platform()\n"
        "print(json.dumps([early, spawned[len(early):]]))\n")
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                          check=True, timeout=60, stdin=subprocess.DEVNULL)
    early, later = json.loads(done.stdout.strip().splitlines()[-1])
    assert ["agentls-platform", ["uname", "-p"]] in early
    assert later == []  # the client's own call then finds the answer kept
