"""Every Python process AgentLS starts is started through here (issue 36, docs/SECURITY.md).

``python -m X`` and ``python -c ...`` put the working folder first on ``sys.path``: started in
a workspace, a file there named like a standard module (``types.py``, ``json.py``) is imported
instead of it and runs. Opening or searching a repository must never run its code, so a
Python child gets ``-P`` (Python >= 3.11: nothing prepended to ``sys.path``), or ``-I`` when it
needs nothing of the environment or of site hooks (``-I`` implies ``-P``, ``-E``, ``-s``), and a
worker runs in ``neutral_cwd()``, not the workspace, so that an empty or ``.`` entry in
``PYTHONPATH`` cannot name the workspace either. tests/unit/test_python_child.py fails when
code in the package starts ``sys.executable`` any other way.
"""

from __future__ import annotations

import sys
from pathlib import Path

SAFE_PATH = "-P"  # no working folder, script folder or '' put first on sys.path
ISOLATED = "-I"  # -P, and no PYTHON* variables, no user site-packages


def python_argv(*args: str, isolated: bool = False) -> list[str]:
    """This interpreter's command line for ``args`` (``-m``, ``-c`` and the rest)."""
    return [sys.executable, ISOLATED if isolated else SAFE_PATH, *args]


def module_argv(module: str, *args: str) -> list[str]:
    """``python -P -m module args``: a module of AgentLS (or of its dependencies)."""
    return python_argv("-m", module, *args)


def agentls_argv(*args: str) -> list[str]:
    """The ``agentls`` command as a Python child: ``python -P -m agentls args``."""
    return module_argv("agentls", *args)


def neutral_cwd() -> str:
    """A working folder for a worker that needs none: the folder AgentLS is installed in
    (already on ``sys.path``, holding no project's files), never the workspace."""
    return str(Path(__file__).resolve().parents[2])
