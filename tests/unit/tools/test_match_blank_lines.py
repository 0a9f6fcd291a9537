"""Tests for the blank-line layer of edit matching (server/agentls/tools/edit/match_blank_lines.py,
through matching.apply_edits): one blank line fewer or more than the file still matches when
the place stays unique, keeps the file's blank lines, and never edits the wrong place."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentls.tools.edit.matching import MatchError, apply_edits

FILE = (
    "import os\n"
    "\n"
    "\n"
    "def first():\n"
    "    return 1\n"
    "\n"
    "\n"
    "def second():\n"
    "    return 2\n"
)


def test_one_blank_line_fewer_matches_and_keeps_the_files_blank_lines() -> None:
    search = "def first():\n    return 1\n\ndef second():\n    return 2\n"
    replace = "def first():\n    return 10\n\ndef second():\n    return 2\n"
    outcome = apply_edits(FILE, [(search, replace)])
    assert outcome.text == FILE.replace("return 1\n", "return 10\n")
    assert outcome.layers == ("blank_lines",)
    assert (outcome.edits[0].start_line, outcome.edits[0].end_line) == (4, 9)


def test_one_blank_line_more_matches() -> None:
    text = "def a():\n    pass\ndef b():\n    pass\n"
    search = "def a():\n    pass\n\ndef b():\n    pass"
    outcome = apply_edits(text, [(search, search.replace("def b", "def c"))])
    assert outcome.text == text.replace("def b", "def c")
    assert outcome.layers == ("blank_lines",)


def test_blank_line_inside_a_function_dropped_by_the_model() -> None:
    text = "def f():\n    x = 1\n\n    return x\n"
    outcome = apply_edits(text, [("    x = 1\n    return x\n", "    x = 2\n    return x\n")])
    assert outcome.text == "def f():\n    x = 2\n\n    return x\n"


def test_a_new_line_inserted_where_the_file_has_blank_lines() -> None:
    search = "    return 1\ndef second():"
    replace = "    return 1\n\n\nTHIRD = 3\ndef second():"
    outcome = apply_edits(FILE, [(search, replace)])
    assert outcome.text == FILE.replace("    return 1\n\n\ndef second",
                                        "    return 1\n\n\nTHIRD = 3\ndef second")


def test_leading_and_trailing_blank_lines_of_the_search_add_nothing() -> None:
    text = "a = 1\nb = 2\nc = 3\n"
    outcome = apply_edits(text, [("\nb = 2\n\n", "\nb = 20\n\n")])
    assert outcome.text == "a = 1\nb = 20\nc = 3\n"


def test_deleting_a_block_found_by_ignoring_blank_lines() -> None:
    text = "keep\nx = 1\n\ny = 2\nkeep too\n"
    outcome = apply_edits(text, [("x = 1\ny = 2\n", "")])
    assert outcome.text == "keep\nkeep too\n"


def test_ambiguity_is_refused_with_the_layer_named() -> None:
    text = "x = 1\n\ny = 2\nz\nx = 1\n\n\ny = 2\n"
    with pytest.raises(MatchError) as caught:
        apply_edits(text, [("x = 1\ny = 2\n", "x = 3\ny = 2\n")])
    assert caught.value.code == "AMBIGUOUS"
    assert "when blank lines are ignored" in caught.value.message
    assert caught.value.lines == (1, 5)


def test_indentation_still_counts_in_this_layer() -> None:
    text = "if x:\n    y = 1\n\n    z = 2\n"
    with pytest.raises(MatchError) as caught:
        apply_edits(text, [("y = 1\n        z = 2\n", "y = 1\n")])
    assert caught.value.code == "NO_MATCH"
    assert "blank lines" in caught.value.message


def test_crlf_file_keeps_its_endings() -> None:
    text = "a\r\n\r\nb\r\nc\r\n"
    outcome = apply_edits(text, [("a\nb\n", "a\nB\n")])
    assert outcome.text == "a\r\n\r\nB\r\nc\r\n"


# --- never a wrong place ----------------------------------------------------------------------

_WORDS = st.sampled_from(["a = 1", "b = 2", "def f():", "    return x", "c"])


@st.composite
def drifted_edit(draw: st.DrawFn) -> tuple[list[str], int, int, list[str], int]:
    """A file, the window [start, end) the model means, its search with blank lines added or
    dropped, and which non-blank line of the window it changes."""
    lines = draw(st.lists(st.one_of(_WORDS, st.just("")), min_size=2, max_size=14))
    nonblank = [i for i, line in enumerate(lines) if line]
    if not nonblank:
        lines.append("a = 1")
        nonblank = [len(lines) - 1]
    first = draw(st.sampled_from(nonblank))
    last = draw(st.sampled_from([i for i in nonblank if i >= first]))
    window = lines[first:last + 1]
    search: list[str] = []
    for line in window:
        if line == "" and draw(st.booleans()):
            continue  # the model dropped a blank line
        search.append(line)
        if line and draw(st.integers(0, 3)) == 0:
            search.append("")  # the model added one
    while search and search[-1] == "":
        search.pop()
    changed = draw(st.sampled_from([i for i in range(first, last + 1) if lines[i]]))
    return lines, first, last + 1, search, changed


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drifted_edit())
def test_the_blank_line_layer_never_edits_the_wrong_place(
        case: tuple[list[str], int, int, list[str], int]) -> None:
    lines, start, end, search, changed = case
    text = "\n".join(lines) + "\n"
    target = lines[changed]
    replace = [("CHANGED" if line == target else line) for line in search]
    try:
        outcome = apply_edits(text, [("\n".join(search) + "\n", "\n".join(replace) + "\n")])
    except MatchError as error:
        assert error.code in ("AMBIGUOUS", "NO_MATCH")
        return
    if outcome.layers != ("blank_lines",):
        return  # an earlier layer found the search as written (tested in test_matching.py)
    wanted = [line for line in search if line]
    places = [
        s for s in range(len(lines))
        if [line for line in lines[s:] if line][:len(wanted)] == wanted and lines[s]]
    assert places == [start]  # the one place, or it would have been refused as ambiguous
    expected = [("CHANGED" if line == target and start <= i < end else line)
                for i, line in enumerate(lines)]
    assert outcome.text == "\n".join(expected) + "\n"  # the file's blank lines kept
