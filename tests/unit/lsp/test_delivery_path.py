"""One delivery path (lsp/services/delivery.py): it is the only code in the product that sends
``workspace/applyEdit`` (through pygls's ``workspace_apply_edit*`` or a raw
``send_request``), and the only lsp module that records a review in the session store.
import-linter cannot express "who calls a method", so this reads the syntax trees."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "server" / "agentls"
DELIVERY = PACKAGE / "lsp" / "services" / "delivery.py"


def _sources() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if "devtools" not in p.parts]


def _sends_apply_edit(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name.startswith("workspace_apply_edit"):
        return True
    if name in ("send_request", "send_request_async") and node.args:
        first = node.args[0]
        text = ast.unparse(first)
        return "WORKSPACE_APPLY_EDIT" in text or "workspace/applyEdit" in text
    return False


def _callers(check: Callable[[ast.Call], bool]) -> set[Path]:
    found = set()
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.Call) and check(n) for n in ast.walk(tree)):
            found.add(path)
    return found


def test_delivery_is_the_only_sender_of_workspace_apply_edit() -> None:
    assert _callers(_sends_apply_edit) == {DELIVERY}


def test_no_lsp_feature_writes_the_review_into_the_store_itself() -> None:
    def writes_review(node: ast.Call) -> bool:
        func = node.func
        return isinstance(func, ast.Attribute) and func.attr in (
            "update_metadata", "set_session_metadata")

    lsp_writers = {p for p in _callers(writes_review) if "lsp" in p.relative_to(PACKAGE).parts}
    assert lsp_writers == set()  # engine/notes.py records it (lsp/services/delivery.py calls it)


def test_the_check_finds_a_sender() -> None:
    call = ast.parse("ls.workspace_apply_edit_async(params)").body[0]
    raw = ast.parse("ls.protocol.send_request(lsp.WORKSPACE_APPLY_EDIT, p)").body[0]
    assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
    assert isinstance(raw, ast.Expr) and isinstance(raw.value, ast.Call)
    assert _sends_apply_edit(call.value) and _sends_apply_edit(raw.value)
