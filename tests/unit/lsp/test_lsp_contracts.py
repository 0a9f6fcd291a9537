"""Every lsp module has its place in the import contracts (pyproject.toml): lsp/ holds the
composition root (server.py) and three packages the "Inside lsp/" layers contract orders —
features/, transport/, services/. A module placed beside server.py would escape the
contracts unnoticed."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
LSP = REPO / "server" / "agentls" / "lsp"


def test_every_lsp_module_is_placed_in_the_contracts() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    inside = next(c for c in contracts if str(c["name"]).startswith("Inside lsp/"))
    layers = {str(layer) for layer in inside["layers"]}
    placed = {p.stem if p.is_file() else p.name for p in LSP.iterdir()
              if p.name not in ("__init__.py", "__pycache__")}
    assert placed == layers, "put the new module in lsp/features, lsp/services or lsp/transport"


def test_each_feature_is_independent_of_the_others() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    features = next(c for c in contracts if str(c["name"]).startswith("LSP features are"))
    assert features["type"] == "independence"
    assert features["modules"] == ["agentls.lsp.features.*"]
