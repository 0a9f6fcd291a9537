"""The post-processing table and the early stop of inline completion."""

from __future__ import annotations

import pytest

from agentls.engine.inline.cursor_context import window
from agentls.engine.inline.post import StopRule, clean


def where(text: str, unit: str = "    ", eol: str = "\n"):  # type: ignore[no-untyped-def]
    """The surroundings of the cursor written as ▮ in ``text``."""
    offset = text.index("▮")
    return window(text.replace("▮", ""), offset, 2048, unit=unit, eol=eol).where


@pytest.mark.parametrize(("doc", "answer", "expected"), [
    # suffix: the rest of the line is already there
    ("x = add(1, ▮)\n", "2)", "2"),
    # suffix: the model wrote the following lines again
    ("def f():\n    ▮\n    return y\n", "y = 1\n    return y", "y = 1"),
    # only the suffix: nothing
    ("def f():\n    ▮\n    return y\n", "return y", ""),
    # the whole file again: the middle only
    ("import os\n\n\ndef long_function_name(argument):\n    value = ▮\n    return value\n",
     "import os\n\n\ndef long_function_name(argument):\n    value = argument * 2\n"
     "    return value\n", "argument * 2"),
    # brackets: a closer the line never opened ends the answer
    ("total = compute(▮\n", "a, b)) + 1", "a, b)"),
    # whitespace only
    ("x = 1\n▮\n", "   \n  ", ""),
    # a repeat of the line above
    ("x = compute(1)\n▮\n", "x = compute(1)", ""),
    # a chat model's fence
    ("def f():\n    return ▮\n", "```python\n42\n```", "42"),
])
def test_table(doc: str, answer: str, expected: str) -> None:
    assert clean(answer, where(doc), chat="```" in answer) == expected


def test_tabs_kept_in_a_tab_indented_file() -> None:
    doc = "def f():\n\tif x:▮\n"
    assert clean("\n        y()\n        z()", where(doc, unit="\t")) == "\n\t\ty()\n\t\tz()"


def test_spaces_kept_in_a_space_indented_file() -> None:
    assert clean("\n\t\ty()", where("def f():\n    if x:▮\n")) == "\n        y()"


def test_crlf_file_gets_crlf() -> None:
    assert clean("\n    return 1", where("def f():▮\r\n", eol="\r\n")) == "\r\n    return 1"


def test_stop_single_line_mid_line() -> None:
    rule = StopRule(where("x = foo(▮a)\n"), [], 12)
    assert rule.cut("bar, \nmore") == ("bar, ", True)


def test_stop_end_of_block_by_indentation() -> None:
    rule = StopRule(where("def f():▮\n"), [], 12)
    assert rule.cut("\n    return 1\n\ndef g():\n") == ("\n    return 1", True)
    assert rule.cut("\n    return 1\n") == ("\n    return 1\n", False)  # may go on


def test_stop_dedent_below_the_cursor_line() -> None:
    rule = StopRule(where("def f():\n    ▮\n"), [], 12)
    assert rule.cut("a = 1\n    b = 2\nx = 3\n")[0] == "a = 1\n    b = 2"


def test_stop_closing_bracket_line_kept() -> None:
    rule = StopRule(where("function f() {▮\n", unit="  "), [], 12)
    assert rule.cut("\n  return 1;\n}\nfunction g() {\n") == ("\n  return 1;\n}", True)


def test_stop_tokens_and_line_limit() -> None:
    rule = StopRule(where("x = ▮\n"), ["<|endoftext|>"], 3)
    assert rule.cut("1<|endoftext|>junk") == ("1", True)
    assert rule.cut("a\nb\nc\nd\ne\n")[1] is True
