"""engine/loop/tool_dispatch.py: how an editor shows a proposed change and the model's claim
after it, until the person's review ends (DESIGN.md 13)."""

from __future__ import annotations

from agentls.engine.loop.tool_dispatch import ProposedClaims, as_proposed


def test_a_change_tools_ok_is_proposed() -> None:
    assert as_proposed("edit_file", True, "ok (path: calc.py)") == "proposed (path: calc.py)"
    assert as_proposed("read_file", True, "ok (path: calc.py)") == "ok (path: calc.py)"
    assert as_proposed("edit_file", False, "NO_MATCH: x") == "NO_MATCH: x"


def test_text_before_any_proposed_change_is_as_the_model_wrote_it() -> None:
    claims = ProposedClaims()
    assert claims.text("I will fix add().") == "I will fix add()."
    claims.tool_result("read_file", True, "ok (path: calc.py)")
    assert claims.text("It subtracts.") == "It subtracts."
    claims.tool_result("edit_file", False, "NO_MATCH: no such text")  # nothing proposed
    assert claims.text("Trying again.") == "Trying again."


def test_the_claim_after_a_proposed_change_is_marked_once_per_step() -> None:
    claims = ProposedClaims()
    claims.tool_result("edit_file", True, "ok (path: calc.py)")
    # Streamed: blank lines first, the words later; the mark goes where the words begin.
    deltas = ["\n\n", "Fixed ", "add() ", "so it adds."]
    assert "".join(claims.text(d) for d in deltas) == "\n\nproposed: Fixed add() so it adds."
    # After another tool call, the next step is a claim of its own.
    claims.tool_result("shell_exec", True, "ok (exit_code: 0)")
    assert claims.text("Tests pass.") == "proposed: Tests pass."
