"""docs/ARCHITECTURE.md walks one chat request hop by hop: every hop names a real function,
each calls the next, there are at most ten, and none goes back up a layer."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md"
LAYERS = ("agentls.cli", "agentls.lsp", "agentls.engine", "agentls.llm")  # top to bottom


def hops() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    walk = text.split("<!-- walk:start -->", 1)[1].split("<!-- walk:end -->", 1)[0]
    return re.findall(r"^\d+\. `([\w.]+)`", walk, flags=re.MULTILINE)


def resolve(dotted: str) -> Any:
    """The function a dotted name names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise AssertionError(f"{dotted} names nothing")


def layer(dotted: str) -> int:
    return next(i for i, name in enumerate(LAYERS) if dotted.startswith(name + "."))


def test_the_walk_names_real_functions_each_calling_the_next() -> None:
    names = hops()
    assert 5 <= len(names) <= 10, names
    functions = [resolve(name) for name in names]
    assert all(inspect.isfunction(f) for f in functions), names
    for name, here, following in zip(names, functions, names[1:], strict=False):
        short = following.rsplit(".", 1)[1]
        assert re.search(rf"\b{short}\(", inspect.getsource(here)), (
            f"{name} does not call {short}")


def test_no_hop_goes_back_up_a_layer() -> None:
    levels = [layer(name) for name in hops()]
    assert levels == sorted(levels), list(zip(hops(), levels, strict=True))
