"""Git commands started before they are needed, and how every git command is spawned.

`agentls run` starts the git commands of the project facts as soon as it knows the
workspace: on a 20,000-file repository `git status` reads the work tree for ~40 ms, which
then passes on another core while Python imports the engine. ``tools/git/runner.py`` takes a
started command's output once, when it would otherwise spawn the very same command; a
command nobody takes within ``PREFETCH_TTL_S`` is discarded (the tree may have changed
since), and any left at exit are killed.

Standard library only: it is imported before the engine is.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

CONFIG = ("-c", "color.ui=never", "-c", "core.quotepath=off", "-c", "core.fsmonitor=false")
# Variables that would point git at another repository than the root we pass.
REPOSITORY_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")
PREFETCH_TTL_S = 3.0

# The commands engine/prompt/facts.py runs through tools/git/read.py (git_facts), in its order.
FACTS_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("rev-parse", "--is-inside-work-tree"),
    ("rev-parse", "--show-toplevel"),
    ("status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal", "--", "."),
    ("log", "-n5", "--no-color", "--date=short", "--format=%h %ad %an: %s", "--", "."),
)

_Key = tuple[str, tuple[str, ...]]
_started: dict[_Key, tuple[float, subprocess.Popen[bytes]]] = {}
_starting: list[threading.Thread] = []  # start_soon's threads, waited for before a take
_lock = threading.Lock()


def command(root: Path, args: Sequence[str]) -> list[str]:
    """``git -C <root> --no-pager`` with our config, then ``args``."""
    return ["git", "-C", str(root), "--no-pager", *CONFIG, *args]


def environment() -> dict[str, str]:
    """The environment of every git command: no prompts, pager, optional locks or another
    repository named by the caller's variables; messages in English (we parse some)."""
    env = {k: v for k, v in os.environ.items() if k not in REPOSITORY_VARIABLES}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", GIT_PAGER="cat", LC_ALL="C")
    return env


def start(root: Path, commands: Sequence[Sequence[str]] = FACTS_COMMANDS) -> int:
    """Start ``commands`` in ``root`` now; answers how many started. Without git (or a
    readable ``root``) nothing starts: the command run later reports the problem."""
    env = environment()
    begun = 0
    for args in commands:
        key = (str(root), tuple(args))
        try:
            process = subprocess.Popen(command(root, args), stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        except OSError:
            break
        with _lock:
            previous = _started.pop(key, None)
            _started[key] = (time.monotonic(), process)
        if previous is not None:
            _discard(previous[1])
        begun += 1
    return begun


def start_soon(root: Path, commands: Sequence[Sequence[str]] = FACTS_COMMANDS) -> None:
    """``start`` on a thread of its own: each spawn waits until git has begun (~1 ms, tens of
    ms on a busy machine), and the caller goes on meanwhile. ``take`` waits for it."""
    thread = threading.Thread(target=start, args=(root, commands), name="agentls-git-prefetch")
    with _lock:
        _starting.append(thread)
    thread.start()


def _wait_for_starts() -> None:
    with _lock:
        starting = list(_starting)
    for thread in starting:
        thread.join()
    with _lock:
        _starting[:] = [t for t in _starting if t.is_alive()]


def take(root: Path, args: Sequence[str]) -> subprocess.Popen[bytes] | None:
    """The started ``git args`` in ``root`` if there is one, young enough; once."""
    _wait_for_starts()
    with _lock:
        found = _started.pop((str(root), tuple(args)), None)
    if found is None:
        return None
    begun, process = found
    if time.monotonic() - begun > PREFETCH_TTL_S:
        _discard(process)
        return None
    return process


def discard_all() -> None:
    """Kill and reap what nobody took (at exit; tests)."""
    _wait_for_starts()
    with _lock:
        pending = [process for _, process in _started.values()]
        _started.clear()
    for process in pending:
        _discard(process)


def _discard(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.communicate()


atexit.register(discard_all)
