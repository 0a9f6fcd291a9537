"""Every lsp module has its place in the import contracts (pyproject.toml): a feature (in
"LSP features are independent"), a feature's internal (code_actions' action_*), a shared
service (which never imports a feature), or the composition root. A new module that is none
of these would escape the contracts unnoticed."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
LSP = REPO / "server" / "agentls" / "lsp"


def _modules(contracts: list[dict[str, Any]], starts: str, key: str) -> set[str]:
    found = next(c for c in contracts if str(c["name"]).startswith(starts))
    return {str(m) for m in found[key]}


def test_every_lsp_module_is_placed_in_the_contracts() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    features = _modules(contracts, "LSP features are independent", "modules")
    services = _modules(contracts, "Shared lsp services never import", "source_modules")
    internals = _modules(contracts, "A feature's internals", "forbidden_modules")
    placed = features | services | internals | {"agentls.lsp.server"}
    modules = {f"agentls.lsp.{p.stem}" for p in LSP.glob("*.py") if p.stem != "__init__"}
    assert modules - placed == set(), "add the new module to a contract in pyproject.toml"
    assert features.isdisjoint(services)
