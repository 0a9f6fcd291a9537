"""Every Python child goes through agentls/base/python_child.py (issue 36): a check over the
package's
source that fails when new code starts ``sys.executable`` another way, and the helper's
children, started in a folder of files named like standard modules, import none of them."""

from __future__ import annotations

import ast
import os
import re
import subprocess
from pathlib import Path

import agentls
from agentls.base import python_child

PACKAGE = Path(agentls.__file__).resolve().parent
HELPER = PACKAGE / "base" / "python_child.py"
# sys.executable may be read only as a path (the folder beside it, the file it points to),
# never put into a command line.
PATH_READERS = {"Path", "realpath", "dirname", "resolve"}
PYTHON_NAME = re.compile(r"python[0-9.]*|py")


def _is_sys_executable(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "executable"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _is_python_name(node: ast.AST) -> bool:
    """A string naming an interpreter: ``python``, ``python3.11``, ``/usr/bin/python3``."""
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)
            and PYTHON_NAME.fullmatch(node.value.rsplit("/", 1)[-1]) is not None)


def unguarded_starts(source: str, filename: str = "<source>") -> list[str]:
    """Where ``source`` could start a Python child without the helper: ``sys.executable`` used
    other than as a path read, ``from sys import executable``, or a command line spelled with
    a bare ``python``/``python3`` first."""
    tree = ast.parse(source, filename)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if _is_sys_executable(node):
            parent = parents.get(node)
            if not (isinstance(parent, ast.Call) and node in parent.args
                    and _called_name(parent) in PATH_READERS):
                found.append((line, "sys.executable"))
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and any(
                alias.name == "executable" for alias in node.names):
            found.append((line, "from sys import executable"))
        elif isinstance(node, (ast.List, ast.Tuple)) and node.elts and _is_python_name(
                node.elts[0]) and any(isinstance(e, ast.Constant) and e.value in ("-m", "-c")
                                      for e in node.elts[1:]):
            found.append((line, "a command line starting with a bare python"))
        elif isinstance(node, ast.Call) and _called_name(node) in {
                "Popen", "run", "call", "check_call", "check_output", "create_subprocess_exec",
                "start_io", "spawn_agent_process", "execv", "execvp", "execvpe"} and node.args \
                and _is_python_name(node.args[0]):
            found.append((line, "a bare python started"))
    return [f"{filename}:{line}: {what}" for line, what in sorted(found)]


def test_the_check_finds_each_way_of_starting_python_around_the_helper() -> None:
    bad = '''
import subprocess, sys
from sys import executable
subprocess.Popen([sys.executable, "-m", "agentls.index.embed_worker"])
argv = (sys.executable, "-c", "pass")
python = sys.executable
asyncio.create_subprocess_exec(sys.executable, "-m", "agentls", "acp")
subprocess.run(["python3", "-m", "agentls"])
client.start_io("python", "-m", "agentls", "serve")
'''
    assert [line.split(": ", 1)[1] for line in unguarded_starts(bad)] == [
        "from sys import executable", "sys.executable", "sys.executable", "sys.executable",
        "sys.executable", "a command line starting with a bare python", "a bare python started"]
    good = '''
import os, subprocess, sys
from pathlib import Path
from agentls.base.python_child import module_argv, neutral_cwd
subprocess.Popen(module_argv("agentls.index.embed_worker"), cwd=neutral_cwd())
beside = Path(sys.executable).parent / "rg"
paths = [sys.prefix, os.path.realpath(sys.executable)]
languages = ("python", "rust")
'''
    assert unguarded_starts(good) == []


def test_no_module_starts_python_except_through_the_helper() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == HELPER:
            continue
        found += unguarded_starts(path.read_text(encoding="utf-8"),
                                  str(path.relative_to(PACKAGE.parent)))
    assert not found, ("start Python children through agentls.base.python_child "
                       "(docs/SECURITY.md, issue 36): " + "; ".join(found))


def test_children_get_a_safe_path_and_workers_a_folder_of_their_own(tmp_path: Path) -> None:
    assert python_child.module_argv("agentls", "serve")[1:] == ["-P", "-m", "agentls", "serve"]
    assert python_child.python_argv("-c", "pass", isolated=True)[1:] == ["-I", "-c", "pass"]
    neutral = Path(python_child.neutral_cwd())
    assert (neutral / "agentls" / "base" / "python_child.py").is_file()
    assert neutral != Path.cwd() and not (neutral / "types.py").exists()

    # Started in a hostile folder, neither kind imports its files nor sees it on sys.path.
    for name in ("types", "json", "enum", "typing", "os", "site", "sitecustomize",
                 "usercustomize", "agentls"):
        (tmp_path / f"{name}.py").write_text(
            f"open({str(tmp_path / ('MARK_' + name))!r}, 'w').write('ran')\n")
    probe = "import json, sys, types, typing, enum; print(json.dumps(sys.path))"
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    for argv in (python_child.python_argv("-c", probe),
                 python_child.python_argv("-c", probe, isolated=True),
                 python_child.module_argv("json.tool", "--help")):
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, env=env,
                              timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert not list(tmp_path.glob("MARK_*")), argv
        if "-c" in argv:
            assert str(tmp_path) not in done.stdout and '""' not in done.stdout
