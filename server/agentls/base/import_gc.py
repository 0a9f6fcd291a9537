"""The cyclic garbage collector held off while a command imports its modules.

Start-up makes ~100,000 container objects that live as long as the process: modules,
classes, dataclasses, the pydantic models of the settings and of ``openai``. The collector,
counting allocations, walked them again and again while they were made: ~49 ms of
`agentls run`'s ~450 ms to its first request on 20,000 files (one full collection alone
~20 ms), for nothing, since none of it is garbage. So the heavy imports run with it off,
and what they made is then frozen (``gc.freeze``: left out of every later collection,
which also makes the collections of a long session cheaper). Objects that are already
garbage in cycles at that moment are kept too; start-up makes few.

Used around the few imports that pull in the engine or the server (cli/main.py, cli/run.py,
cli/loop.py, cli/serve_cmd.py, and the server's background imports in lsp/server.py). Safe
from several threads: the collector comes back on when the last of them is done.
"""

from __future__ import annotations

import gc
import importlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

_lock = threading.Lock()
_importing = 0
_was_enabled = True


@contextmanager
def imports_without_gc() -> Iterator[None]:
    """The collector off inside; then what exists is frozen and the collector is on again
    (if it was on before the first of these began)."""
    global _importing, _was_enabled
    with _lock:
        if _importing == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _importing += 1
    try:
        yield
    finally:
        with _lock:
            _importing -= 1
            if _importing == 0:
                gc.freeze()
                if _was_enabled:
                    gc.enable()


def import_module(name: str) -> ModuleType:
    """``importlib.import_module`` inside ``imports_without_gc`` (for ``asyncio.to_thread``)."""
    with imports_without_gc():
        return importlib.import_module(name)
