"""Import ``openai`` without running its ``types`` packages' ``__init__`` files up front.

``import openai`` takes ~400 ms, and ~300 of them are ``openai/types/__init__.py`` and its
sub-packages' ``__init__`` files: each re-exports every model of the API (evals, graders,
responses, realtime ...), so importing the package builds ~700 pydantic classes that a chat
completion never touches. That was most of `agentls run`'s start-up and of the first chat
after the editor starts the server (issue 17).

``import_openai()`` imports the same ``openai`` with one difference: while it runs, a package
under ``openai.types`` is created with its ``__path__`` (so ``from openai.types.chat import
ChatCompletionChunk`` loads that one module, as always) but its ``__init__`` file runs only
when somebody asks the package for a name it does not have yet. Then it runs, whole, exactly
once, and the name is answered from it: the objects are the very ones an eager import makes,
only later. A name that is a submodule (``openai.types.chat``) is imported as the submodule,
which is what ``from package import submodule`` gives. Packages first imported after
``import_openai()`` returns load eagerly, as usual.

If ``openai`` is already imported (a host process, a test), nothing changes. Tests pin the
assumption this rests on for the installed version: no ``types`` package binds a name that is
also one of its submodules to anything but that submodule (tests/llm/test_openai_import.py).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

LAZY_ROOT = "openai.types"


class _LazyInitLoader(importlib.abc.Loader):
    """Loads a package's namespace now and runs its ``__init__`` on the first missing name."""

    def __init__(self, real: importlib.abc.Loader) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.real.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        real = self.real
        lock = threading.RLock()
        loaded = False

        def load() -> None:
            nonlocal loaded
            with lock:
                if loaded:
                    return
                loaded = True
                del module.__dict__["__getattr__"], module.__dict__["__dir__"]
                real.exec_module(module)

        def __getattr__(name: str) -> Any:
            if name.startswith("__") and name != "__all__":
                raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
            if not loaded:
                submodule = f"{module.__name__}.{name}"
                if not name.startswith("_") and importlib.util.find_spec(submodule):
                    return importlib.import_module(submodule)
                load()
            try:
                return module.__dict__[name]
            except KeyError:
                raise AttributeError(
                    f"module {module.__name__!r} has no attribute {name!r}") from None

        def __dir__() -> list[str]:
            load()
            return sorted(module.__dict__)

        module.__dict__["__getattr__"] = __getattr__
        module.__dict__["__dir__"] = __dir__


class _LazyTypesFinder(importlib.abc.MetaPathFinder):
    """Finds ``openai.types`` packages with the path finder, then defers their ``__init__``."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != LAZY_ROOT and not fullname.startswith(LAZY_ROOT + "."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.submodule_search_locations is None or spec.loader is None:
            return spec  # a plain module (or not found): the usual way
        assert isinstance(spec.loader, importlib.abc.Loader)
        spec.loader = _LazyInitLoader(spec.loader)
        return spec


_import_lock = threading.Lock()


def import_openai() -> ModuleType:
    """``openai``, imported with its ``types`` packages' ``__init__`` files deferred."""
    with _import_lock:
        if "openai" in sys.modules:
            return sys.modules["openai"]
        finder = _LazyTypesFinder()
        sys.meta_path.insert(0, finder)
        try:
            return importlib.import_module("openai")
        finally:
            sys.meta_path.remove(finder)
