"""The collector held off while a command imports its modules (agentls/base/import_gc.py)."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from agentls.base.import_gc import import_module, imports_without_gc


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    gc.unfreeze()
    if was:
        gc.enable()
    else:
        gc.disable()


def test_off_inside_then_what_was_made_is_frozen_and_it_is_on_again() -> None:
    gc.enable()
    gc.unfreeze()
    with imports_without_gc():
        assert not gc.isenabled()
        made = [[index] for index in range(1000)]  # tracked containers, as a module makes
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made)


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with imports_without_gc():
        pass
    assert not gc.isenabled()


def test_it_comes_back_on_only_when_the_last_thread_is_done() -> None:
    gc.enable()
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with imports_without_gc():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    assert inside.wait(10)
    with imports_without_gc():
        pass
    assert not gc.isenabled(), "the other thread is still importing"
    release.set()
    thread.join(10)
    assert gc.isenabled()


def test_an_import_that_fails_still_turns_it_back_on() -> None:
    gc.enable()
    with pytest.raises(ModuleNotFoundError):
        import_module("agentls.no_such_module")
    assert gc.isenabled()


def test_agentls_run_imports_the_engine_without_a_full_collection() -> None:
    """A fresh `agentls run --help`-free start: the run command's imports make no gen-2
    collection (one took ~20 ms when the collector ran during them)."""
    code = (
        "import gc, sys\n"
        "full = []\n"
        "gc.callbacks.append(lambda phase, info: phase == 'stop' and info['generation'] == 2"
        " and full.append(1))\n"
        "from agentls.cli.main import _command\n"
        "from agentls.base.import_gc import imports_without_gc\n"
        "with imports_without_gc():\n"
        "    _command('run')\n"
        "    from agentls.cli.headless import Headless\n"
        "print(len(full), gc.isenabled(), gc.get_freeze_count() > 50_000)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.split() == ["0", "True", "True"]
