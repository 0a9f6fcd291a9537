"""The server's background imports (engine/host_loader.py ``EngineLoader.imported``): one
at a time, so the start-up work and a request that needs the engine at once (a reloaded
editor asks for the history right away) never import the engine's package tree in two
threads together."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
import subprocess
import sys
import textwrap
import threading
import time
import types
from pathlib import Path

import pytest

from agentls.base import import_gc
from agentls.llm import tls
from agentls.lsp.server import AgentLanguageServer
from agentls.lsp.services import runs


async def test_imports_asked_for_together_run_one_after_the_other(
        monkeypatch: pytest.MonkeyPatch) -> None:
    running, peak, threads = 0, 0, set()
    lock = threading.Lock()

    def slow_import(name: str) -> types.ModuleType:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        threads.add(threading.get_ident())
        time.sleep(0.05)
        with lock:
            running -= 1
        return types.ModuleType(name)

    monkeypatch.setattr(import_gc, "import_module", slow_import)
    server = AgentLanguageServer()
    modules = await asyncio.gather(server.engines.imported("agentls_probe.engine"),
                                   server.engines.imported("agentls_probe.contexts"))

    assert [m.__name__ for m in modules] == ["agentls_probe.engine", "agentls_probe.contexts"]
    assert peak == 1
    assert threading.get_ident() not in threads  # never on the event loop's thread


async def test_a_module_already_imported_is_answered_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def no_import(name: str) -> types.ModuleType:
        raise AssertionError(f"{name} was imported again")

    monkeypatch.setattr(import_gc, "import_module", no_import)
    assert await AgentLanguageServer().engines.imported("json") is sys.modules["json"]


def _imported_inside_functions(source: str) -> set[str]:
    """The modules a file imports inside its functions (``from package import module``
    counts as the module)."""
    found: set[str] = set()
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
                spec = importlib.util.find_spec(node.module)
                if spec is not None and spec.submodule_search_locations is not None:
                    found.update(f"{node.module}.{alias.name}" for alias in node.names
                                 if importlib.util.find_spec(f"{node.module}.{alias.name}"))
    return found


def test_the_start_up_work_imports_every_module_a_run_imports_on_first_use() -> None:
    """runs.py imports some modules inside its methods; the server's start-up work imports
    the engine and ``RUN_IMPORTS``, so a first chat imports none of them on the event loop.
    Checked in a fresh interpreter against the imports written in runs.py's functions."""
    wanted = sorted(_imported_inside_functions(Path(runs.__file__).read_text()))
    # seen in `from agentls.lsp.services import delivery`
    assert "agentls.lsp.services.delivery" in wanted
    code = textwrap.dedent(f"""
        import importlib, json, sys
        import agentls.lsp.server, agentls.engine.host
        from agentls.lsp.services.runs import RUN_IMPORTS
        for name in RUN_IMPORTS:
            importlib.import_module(name)
        print(json.dumps([name for name in {wanted!r} if name not in sys.modules]))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


async def test_who_needs_the_engine_first_also_starts_the_tls_context(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A chat that comes before the start-up work imports the engine itself; it must start
    the TLS context's build too, else the first backend builds it on the event loop."""
    monkeypatch.setattr(tls, "_building", None)
    monkeypatch.setattr(tls, "_context", None)
    await AgentLanguageServer().engines.engine_module()
    building = tls._building
    assert building is not None and building.name == "agentls-tls"
    building.join()
    assert tls._context is not None
