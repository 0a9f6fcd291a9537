"""The tabs_spaces layer: a search indented with spaces finds a block indented with tabs
(and the reverse), once; the replacement takes the file's indentation; ambiguity is refused."""

from __future__ import annotations

import pytest

from agentls.tools.edit.matching import MatchError, apply_edits

TABS = "def f(x):\n\tif x:\n\t\treturn 1\n\treturn 2\n"
SPACES = "def f(x):\n    if x:\n        return 1\n    return 2\n"


def test_spaces_search_in_a_tab_indented_file() -> None:
    outcome = apply_edits(TABS, [("    if x:\n        return 1\n",
                                  "    if x:\n        y = 1\n        return y\n")])
    assert outcome.text == "def f(x):\n\tif x:\n\t\ty = 1\n\t\treturn y\n\treturn 2\n"
    assert outcome.layers == ("tabs_spaces",)


def test_tab_search_in_a_space_indented_file() -> None:
    outcome = apply_edits(SPACES, [("\tif x:\n\t\treturn 1\n", "\tif x:\n\t\treturn 3\n")])
    assert outcome.text == "def f(x):\n    if x:\n        return 3\n    return 2\n"
    assert outcome.layers == ("tabs_spaces",)


def test_exact_match_still_wins() -> None:
    assert apply_edits(TABS, [("\treturn 2\n", "\treturn 4\n")]).layers == ("exact",)


def test_ambiguous_after_normalising_is_refused() -> None:
    text = "if a:\n\tx = 1\nif a:\n\tx = 1\n"
    with pytest.raises(MatchError) as caught:
        apply_edits(text, [("if a:\n    x = 1\n", "if a:\n    x = 2\n")])
    assert caught.value.code == "AMBIGUOUS"
    assert "tabs and spaces" in str(caught.value)


def test_inconsistent_indentation_is_still_no_match() -> None:
    with pytest.raises(MatchError) as caught:
        apply_edits(TABS, [("    if x:\n    return 1\n", "    pass\n")])
    assert caught.value.code == "NO_MATCH"
