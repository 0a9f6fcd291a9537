"""Which modules a process has loaded when it first connects to the scripted model: for the
start-up tests (what a run defers) and ``bench/bench_cli.py`` (the floor of its imports).

The command runs in a fresh interpreter (``python -P``) with an audit hook that writes
``sys.modules`` at the first ``socket.connect`` to ``port``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from agentls.base.python_child import python_argv


def modules_at_connect(argv: Sequence[str], port: int, out: Path, *,
                       env: Mapping[str, str], stdin: str = "",
                       prefixes: tuple[str, ...] = ("agentls",),
                       timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run ``agentls *argv`` and answer how it went and the loaded modules named with one of
    ``prefixes``, in the order they were first imported (none when it never connected)."""
    code = (
        "import sys\n"
        "def hook(event, args):\n"
        "    if event == 'socket.connect' and isinstance(args[1], tuple) and \\\n"
        f"            args[1][1] == {port} and not hook.done:\n"
        "        hook.done = True\n"
        f"        with open({str(out)!r}, 'w') as f:\n"
        f"            f.write('\\n'.join(m for m in sys.modules if m.startswith({prefixes!r})))\n"
        "hook.done = False\n"
        "sys.addaudithook(hook)\n"
        f"sys.argv = ['agentls', *{list(argv)!r}]\n"
        "from agentls.cli.main import main\n"
        "main()\n")
    out.unlink(missing_ok=True)
    done = subprocess.run(python_argv("-c", code), capture_output=True, text=True,
                          env=dict(env), input=stdin, check=False, timeout=timeout,
                          start_new_session=True)
    modules = out.read_text().split("\n") if out.exists() else []
    return done, modules
