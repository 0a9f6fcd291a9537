"""The completion protocol: the strict DONE marker and the last JSON status object."""

from __future__ import annotations

import pytest

from agentls.engine.loop.done_marker import (
    Completion,
    check,
    check_json,
    check_marker,
    final_line,
    json_objects,
)

# --- marker (RG-009) -----------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "DONE",
    "All fixed.\nDONE",
    "All fixed.\nDONE\n",
    "All fixed.\r\nDONE\r\n",
    "All fixed.\n  DONE  \n\n\n",
    "All fixed.\n\tDONE\n   \n",
])
def test_marker_done_when_the_final_non_empty_line_is_done(text: str) -> None:
    assert check_marker(text) == Completion("done")


@pytest.mark.parametrize("text", [
    "",
    "   \n\n",
    "done",
    "Done",
    "DONE.",
    "**DONE**",
    "`DONE`",
    "DONE!",
    "The task is DONE",
    "DONE\nbut one more thing",
    "DONE DONE",
    "DON E",
    "NOT DONE",
])
def test_marker_anything_else_continues(text: str) -> None:
    assert check_marker(text) == Completion("continue")


def test_final_line() -> None:
    assert final_line("a\n b \n\n") == "b"
    assert final_line("\n \n") is None


# --- finding JSON objects ------------------------------------------------------------------------


def test_json_objects_are_top_level_only_and_in_order() -> None:
    text = 'x {"a": {"b": 1}} y {"c": [{"d": 2}]} z'
    assert list(json_objects(text)) == [{"a": {"b": 1}}, {"c": [{"d": 2}]}]


def test_json_objects_skip_broken_json_and_non_objects() -> None:
    text = 'code { not json } [1, 2] {"ok": true} {"half": '
    assert list(json_objects(text)) == [{"ok": True}]


def test_braces_inside_strings_do_not_confuse_the_scanner() -> None:
    text = '{"summary": "use {x} and \\"}\\" and {{y}}", "status": "done"} trailing }'
    assert list(json_objects(text)) == [
        {"summary": 'use {x} and "}" and {{y}}', "status": "done"}]


# --- json (RG-010) -------------------------------------------------------------------------------


def test_object_followed_by_trailing_prose() -> None:
    text = ('I fixed it.\n{"status": "done", "summary": "fixed add", "next": null}\n'
            "Let me know if you need anything else! {curly} prose.")
    assert check_json(text) == Completion("done", summary="fixed add")


def test_nested_braces_in_strings_and_objects() -> None:
    text = ('{"status": "continue", "summary": "found {a - b} in calc()", '
            '"next": "write {\\"x\\": 1} to config", "extra": {"files": [{"p": "a"}]}}')
    assert check_json(text) == Completion(
        "continue", summary="found {a - b} in calc()", next='write {"x": 1} to config')


def test_several_objects_the_last_status_object_wins() -> None:
    text = ('{"status": "continue", "summary": "first"}\n'
            'then {"status": "done", "summary": "second"}\n'
            'and an example without status: {"name": "x"}')
    assert check_json(text) == Completion("done", summary="second")


def test_code_fences() -> None:
    text = ('Here you go:\n```json\n{\n  "status": "continue",\n  "next": "run tests"\n}\n```\n'
            "```python\ndef f():\n    return {'a': 1}\n```")
    assert check_json(text) == Completion("continue", next="run tests")


def test_status_is_read_case_insensitively_and_error_is_a_status() -> None:
    assert check_json('{"status": " DONE "}').status == "done"
    assert check_json('{"status": "error", "summary": "cannot"}') == Completion(
        "error", summary="cannot")


@pytest.mark.parametrize(("text", "fragment"), [
    ("All done, no JSON here.", 'no JSON object with a "status"'),
    ("{status: done}", 'no JSON object with a "status"'),
    ("{'status': 'done'}", 'no JSON object with a "status"'),
    ('{"status": "done"', 'no JSON object with a "status"'),
    ('{"result": "done"}', 'no JSON object with a "status"'),
    ('{"status": "finished"}', 'status "finished"'),
    ('{"status": 1}', "status 1"),
    ('{"status": "done", "summary": ["a"]}', '"summary" must be a string'),
    ('{"status": "done"} {"status": "maybe"}', 'status "maybe"'),
])
def test_invalid_json(text: str, fragment: str) -> None:
    found = check_json(text)
    assert found.status == "invalid-json" and not found.done
    assert fragment in found.problem


def test_check_dispatches_on_mode() -> None:
    text = 'work\n{"status": "done"}'
    assert check(text, "json").done
    assert not check(text, "marker").done


def test_to_dict() -> None:
    assert Completion("invalid-json", problem="p").to_dict() == {
        "status": "invalid-json", "summary": None, "next": None, "problem": "p"}


def test_many_unbalanced_braces_stay_fast_enough_to_finish() -> None:
    text = "{" * 2000 + '{"status": "done"}'
    assert check_json(text).done
