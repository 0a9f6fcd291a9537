"""Tests for server/agentls/tools/edit/matching.py: the search/replace layers behind edit_file."""

from __future__ import annotations

import pytest

from agentls.tools.edit.closest_window import closest_window
from agentls.tools.edit.match_folds import fold_punctuation
from agentls.tools.edit.matching import EditOutcome, MatchError, apply_edits


def edit(text: str, search: str, replace: str) -> EditOutcome:
    return apply_edits(text, [(search, replace)])


def failure(text: str, edits: list[tuple[str, str]]) -> MatchError:
    with pytest.raises(MatchError) as caught:
        apply_edits(text, edits)
    return caught.value


# --- exact ------------------------------------------------------------------------------------


def test_exact_match_replaces_once_and_reports_lines() -> None:
    text = "def a():\n    return 1\n\ndef b():\n    return 2\n"
    outcome = edit(text, "    return 2", "    return 3")
    assert outcome.text == "def a():\n    return 1\n\ndef b():\n    return 3\n"
    assert outcome.layers == ("exact",)
    assert (outcome.edits[0].start_line, outcome.edits[0].end_line) == (5, 5)


def test_exact_match_inside_a_line() -> None:
    outcome = edit("total = price * qty\n", "price * qty", "price * qty * (1 + tax)")
    assert outcome.text == "total = price * qty * (1 + tax)\n"


def test_edits_apply_in_order_each_on_the_result_of_the_previous() -> None:
    text = "alpha\nbeta\ngamma\n"
    outcome = apply_edits(text, [("beta", "BETA"), ("alpha\nBETA", "one\ntwo")])
    assert outcome.text == "one\ntwo\ngamma\n"
    assert outcome.layers == ("exact", "exact")
    assert (outcome.edits[1].start_line, outcome.edits[1].end_line) == (1, 2)


def test_multi_line_block_reports_its_line_range() -> None:
    text = "a\nb\nc\nd\n"
    outcome = edit(text, "b\nc\n", "B\nC\n")
    assert outcome.text == "a\nB\nC\nd\n"
    assert (outcome.edits[0].start_line, outcome.edits[0].end_line) == (2, 3)


def test_replacement_may_delete_the_block() -> None:
    assert edit("keep\ndrop me\nkeep too\n", "drop me\n", "").text == "keep\nkeep too\n"


# --- errors -----------------------------------------------------------------------------------


def test_empty_search_is_refused_with_advice() -> None:
    error = failure("text\n", [("", "new")])
    assert error.code == "EMPTY_SEARCH"
    assert "`search` is empty" in error.message
    assert "neighbouring line" in error.message


def test_ambiguous_exact_match_lists_line_numbers() -> None:
    text = "x = 1\nprint(x)\ny = 2\nprint(x)\n"
    error = failure(text, [("print(x)", "print(x, y)")])
    assert error.code == "AMBIGUOUS"
    assert error.lines == (2, 4)
    assert "matches 2 places exactly (line 2, line 4)" in error.message
    assert "Add surrounding lines" in error.message


def test_overlapping_occurrences_count_as_ambiguous() -> None:
    error = failure("aaa\n", [("aa", "b")])
    assert error.code == "AMBIGUOUS"


def test_many_matches_are_capped_in_the_message() -> None:
    text = "pass\n" * 30
    error = failure(text, [("pass", "return")])
    assert error.code == "AMBIGUOUS"
    assert "more than 10 places" in error.message
    assert len(error.lines) == 10


def test_ambiguity_in_a_fuzzy_layer_is_reported_with_that_layer() -> None:
    text = "a = 1  \nb\na = 1\t\nb\n"
    error = failure(text, [("a = 1\nb", "a = 2\nb")])
    assert error.code == "AMBIGUOUS"
    assert "when trailing whitespace is ignored" in error.message
    assert "lines 1-2, lines 3-4" in error.message


def test_no_match_shows_closest_lines_with_numbers() -> None:
    text = "import os\n\ndef load(path):\n    with open(path) as f:\n        return f.read()\n"
    error = failure(text, [("def load(p):\n    with open(p) as fh:", "def load(p, mode):")])
    assert error.code == "NO_MATCH"
    assert error.closest is not None
    assert (error.closest.start_line, error.closest.end_line) == (3, 4)
    assert "lines 3-4" in error.message
    assert "3 | def load(path):" in error.message
    assert "4 |     with open(path) as f:" in error.message
    assert "already" not in error.message


def test_no_match_says_when_the_replacement_is_already_there() -> None:
    text = "a\nb\nvalue = compute(x, y)\nc\n"
    error = failure(text, [("value = compute(x)", "value = compute(x, y)")])
    assert error.code == "NO_MATCH"
    assert "already in the file at line 3" in error.message
    assert "may already be applied" in error.message


def test_no_match_in_a_long_file_still_finds_the_closest_window() -> None:
    lines = [f"    result_{n} = transform(value_{n}, factor={n % 7})" for n in range(1, 3001)]
    text = "\n".join(lines) + "\n"
    search = (
        "    result_1500 = transform(value_1500, factor=2)\n"
        "    result_1501 = transfrom(value_1501, factor=3)\n"
    )
    error = failure(text, [(search, "")])
    assert error.closest is not None
    assert (error.closest.start_line, error.closest.end_line) == (1500, 1501)


def test_search_longer_than_the_file_is_not_found() -> None:
    error = failure("one\n", [("one\ntwo\nthree", "x")])
    assert error.code == "NO_MATCH"


def test_all_or_nothing_reports_the_failing_edit() -> None:
    text = "first\nsecond\n"
    error = failure(text, [("first", "FIRST"), ("missing", "x"), ("second", "SECOND")])
    assert error.code == "NO_MATCH"
    assert error.edit_index == 1
    assert error.message.startswith("Edit 2 of 3:")
    assert "None of the 3 edits were applied" in error.message


def test_a_later_edit_can_fail_because_an_earlier_one_changed_the_text() -> None:
    error = failure("abc\n", [("abc", "xyz"), ("abc", "def")])
    assert error.edit_index == 1
    assert error.code == "NO_MATCH"


# --- trailing whitespace ----------------------------------------------------------------------


def test_trailing_whitespace_in_the_file_is_ignored() -> None:
    text = "def f():  \n    x = 1\t\n    return x\n"
    outcome = edit(text, "def f():\n    x = 1\n", "def f():\n    x = 2\n")
    assert outcome.layers == ("trailing_whitespace",)
    assert outcome.text == "def f():\n    x = 2\n    return x\n"


def test_trailing_whitespace_in_the_search_is_ignored() -> None:
    outcome = edit("a\nb\nc\n", "b   \nc  ", "B\nC")
    assert outcome.layers == ("trailing_whitespace",)
    assert outcome.text == "a\nB\nC\n"


# --- indentation ------------------------------------------------------------------------------


CLASS_TEXT = (
    "class Shop:\n"
    "    def total(self, items):\n"
    "        result = 0\n"
    "        for item in items:\n"
    "            result += item.price\n"
    "        return result\n"
)


def test_uniform_indentation_difference_is_ignored_and_replacement_reindented() -> None:
    search = "result = 0\nfor item in items:\n    result += item.price\n"
    replace = "result = 0\nfor item in items:\n    if item.active:\n        result += item.price\n"
    outcome = edit(CLASS_TEXT, search, replace)
    assert outcome.layers == ("indentation",)
    assert outcome.text == (
        "class Shop:\n"
        "    def total(self, items):\n"
        "        result = 0\n"
        "        for item in items:\n"
        "            if item.active:\n"
        "                result += item.price\n"
        "        return result\n"
    )


def test_search_indented_more_than_the_file_is_dedented() -> None:
    text = "if ok:\n    run()\n    stop()\n"
    outcome = edit(text, "        run()\n        stop()", "        run(fast=True)\n    done()")
    assert outcome.layers == ("indentation",)
    # The second line was 4 columns left of the search's base: it stays 4 columns left.
    assert outcome.text == "if ok:\n    run(fast=True)\ndone()\n"


def test_tab_indented_block_at_a_different_depth() -> None:
    text = "func main() {\n\tfor {\n\t\tif x {\n\t\t\ty()\n\t\t}\n\t}\n}\n"
    outcome = edit(text, "if x {\n\ty()\n}", "if x {\n\tz()\n\tw()\n}")
    assert outcome.layers == ("indentation",)
    assert (
        outcome.text == "func main() {\n\tfor {\n\t\tif x {\n\t\t\tz()\n\t\t\tw()\n\t\t}\n\t}\n}\n"
    )


def test_spaces_for_tabs_inside_the_block_match_at_the_tabs_spaces_layer() -> None:
    # Issue 13: the tabs_spaces layer lines the block up (test_matching_tabs.py has more).
    text = "\tif x {\n\t\ty()\n\t}\n"
    outcome = edit(text, "    if x {\n        y()\n    }", "    if x {\n        z()\n    }")
    assert outcome.layers == ("tabs_spaces",)
    assert outcome.text == "\tif x {\n\t\tz()\n\t}\n"


def test_blank_lines_inside_the_block_are_kept_blank() -> None:
    text = "    a = 1\n\n    b = 2\n"
    outcome = edit(text, "a = 1\n\nb = 2", "a = 1\n\nb = 3")
    assert outcome.text == "    a = 1\n\n    b = 3\n"


def test_non_uniform_indentation_does_not_match() -> None:
    error = failure(CLASS_TEXT, [("result = 0\nfor item in items:\nresult += item.price", "x")])
    assert error.code == "NO_MATCH"


# --- unicode punctuation ----------------------------------------------------------------------


def test_curly_quotes_and_dashes_in_the_file_match_ascii_search() -> None:
    text = "title = “Hello — world”\nnote = ‘it’s fine’\n"
    outcome = edit(text, 'title = "Hello - world"', 'title = "Hello, world"')
    assert outcome.layers == ("unicode_punctuation",)
    assert outcome.text == 'title = "Hello, world"\nnote = ‘it’s fine’\n'


def test_ascii_file_matches_a_search_typed_with_typographic_punctuation() -> None:
    text = "    msg = 'don't panic...'\n"
    outcome = edit(text, "msg = ‘don’t panic…’", "msg = 'keep calm'")
    assert outcome.layers == ("unicode_punctuation",)
    assert outcome.text == "    msg = 'keep calm'\n"


def test_non_breaking_and_narrow_spaces_fold_to_spaces() -> None:
    text = "price\u00a0=\u202f10\u2009€\n"
    outcome = edit(text, "price = 10 €", "price = 12 €")
    assert outcome.layers == ("unicode_punctuation",)
    assert outcome.text == "price = 12 €\n"


def test_fold_punctuation_table() -> None:
    assert fold_punctuation("‘a’ “b” – — ‒ − x\u00a0y …") == "'a' \"b\" - - - - x y ..."


# --- line endings -----------------------------------------------------------------------------


def test_crlf_file_stays_crlf_with_an_lf_search() -> None:
    text = "one\r\ntwo\r\nthree\r\n"
    outcome = edit(text, "one\ntwo\n", "ONE\nTWO\nTWO-B\n")
    assert outcome.layers == ("exact",)
    assert outcome.text == "ONE\r\nTWO\r\nTWO-B\r\nthree\r\n"


def test_crlf_file_single_line_search_with_multi_line_replacement() -> None:
    outcome = edit("a\r\nb\r\nc\r\n", "b", "b1\nb2")
    assert outcome.text == "a\r\nb1\r\nb2\r\nc\r\n"


def test_crlf_file_with_a_fuzzy_layer() -> None:
    text = "if x:  \r\n    go()\r\nend\r\n"
    outcome = edit(text, "if x:\n    go()\n", "if y:\n    stop()\n")
    assert outcome.layers == ("trailing_whitespace",)
    assert outcome.text == "if y:\r\n    stop()\r\nend\r\n"


def test_crlf_file_with_reindented_replacement() -> None:
    text = "class A:\r\n    def f(self):\r\n        pass\r\n"
    outcome = edit(text, "def f(self):\n    pass", "def f(self):\n    return 1")
    assert outcome.layers == ("indentation",)
    assert outcome.text == "class A:\r\n    def f(self):\r\n        return 1\r\n"


def test_mixed_line_endings_match_line_by_line() -> None:
    text = "a\r\nb\nc\r\nd\n"
    outcome = edit(text, "a\nb\nc", "x\ny\nz")
    assert outcome.layers == ("exact",)
    assert outcome.text == "x\r\ny\r\nz\r\nd\n"


def test_crlf_search_in_an_lf_file() -> None:
    outcome = edit("a\nb\nc\n", "a\r\nb\r\n", "A\r\nB\r\n")
    assert outcome.text == "A\nB\nc\n"


def test_missing_final_newline_is_not_added() -> None:
    assert edit("a\nb", "b", "c").text == "a\nc"
    outcome = edit("a\nb  ", "b\n", "c\n")
    assert outcome.layers == ("trailing_whitespace",)
    assert outcome.text == "a\nc"


def test_final_newline_is_not_removed() -> None:
    assert edit("a\nb\n", "b", "c").text == "a\nc\n"
    assert edit("a\nb  \n", "b\n", "c\n").text == "a\nc\n"


# --- closest_window ---------------------------------------------------------------------------


def test_closest_window_prefers_the_most_similar_block() -> None:
    lines = ["alpha", "beta", "gamma", "delta", "epsilon"]
    window = closest_window(lines, ["gamma", "delte"])
    assert window is not None
    assert (window.start_line, window.end_line) == (3, 4)
    assert window.lines == ("gamma", "delta")
    assert 0.8 < window.similarity < 1.0


def test_closest_window_on_an_empty_file() -> None:
    assert closest_window([], ["x"]) is None
