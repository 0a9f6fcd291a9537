"""The server's background imports (lsp/server.py ``_imported``): one at a time, so the
start-up work and a request that needs the engine at once (a reloaded editor asks for the
history right away) never import the engine's package tree in two threads together."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import types

import pytest

from agentls import import_gc
from agentls.lsp.server import AgentLanguageServer


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
    modules = await asyncio.gather(server._imported("agentls_probe.engine"),
                                   server._imported("agentls_probe.contexts"))

    assert [m.__name__ for m in modules] == ["agentls_probe.engine", "agentls_probe.contexts"]
    assert peak == 1
    assert threading.get_ident() not in threads  # never on the event loop's thread


async def test_a_module_already_imported_is_answered_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def no_import(name: str) -> types.ModuleType:
        raise AssertionError(f"{name} was imported again")

    monkeypatch.setattr(import_gc, "import_module", no_import)
    assert await AgentLanguageServer()._imported("json") is sys.modules["json"]
