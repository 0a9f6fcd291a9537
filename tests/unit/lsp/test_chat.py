"""lsp/features/chat.py: the closing message of a turn the agentls.chat command ran (what a plain
LSP editor shows of it)."""

from __future__ import annotations

from agentls.lsp.features.chat import ANSWER_SHOWN_CHARS, ended_message
from agentls.lsp.services.protocol import ChatResult

CALC = {"uri": "file:///p/src/calc.py", "kind": "update", "insertions": 1, "deletions": 1}


def shown(uri: str) -> str:
    return uri.removeprefix("file:///p/")


def test_an_applied_edit_is_said_after_the_answer() -> None:
    result: ChatResult = {"text": "add() now adds.", "stopReason": "done", "changes": [CALC],
                          "applied": True}
    assert ended_message(result, shown) == (
        3, "AgentLS: add() now adds.\n\nEdit applied: src/calc.py.")


def test_an_edit_that_did_not_land_is_a_warning_with_why() -> None:
    result: ChatResult = {"text": "Fixed.", "stopReason": "done", "changes": [CALC],
                          "applied": False, "failureReason": "the person rejected it"}
    kind, message = ended_message(result, shown)
    assert kind == 2
    assert message.endswith("Edit not applied (the person rejected it): src/calc.py left "
                            "unchanged.")


def test_a_partial_keep_says_what_was_kept() -> None:
    result: ChatResult = {"text": "", "stopReason": "done", "changes": [CALC],
                          "applied": False, "partial": True,
                          "failureReason": "kept 1 of 2 changes in src/calc.py"}
    assert ended_message(result, shown) == (
        3, "AgentLS: Edit partly applied: kept 1 of 2 changes in src/calc.py.")


def test_an_error_and_a_stop_are_said() -> None:
    failed: ChatResult = {"text": "", "stopReason": "error", "changes": [], "applied": None,
                          "error": {"message": "connection refused", "kind": "connection",
                                    "hint": "start the model server"}}
    assert ended_message(failed, shown) == (
        1, "AgentLS: Error: connection refused (start the model server)")
    stopped: ChatResult = {"text": "Half", "stopReason": "max_iterations", "changes": [],
                           "applied": None}
    assert ended_message(stopped, shown) == (3, "AgentLS: Half\n\nStopped: max iterations.")


def test_a_long_answer_is_cut() -> None:
    result: ChatResult = {"text": "x" * 5000, "stopReason": "done", "changes": [],
                          "applied": None}
    _, message = ended_message(result, shown)
    assert len(message) == len("AgentLS: ") + ANSWER_SHOWN_CHARS and message.endswith("…")
