"""Which hunks of a proposed change a text holds (a partial review's truth)."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from agentls.workspace.kept_hunks import hunks, hunks_and_kept, kept_hunks

BASE = "".join(f"line {i}\n" for i in range(1, 21))
PROPOSED = BASE.replace("line 2\n", "line two\n").replace("line 18\n", "line eighteen\n")


def test_the_hunks_of_a_change() -> None:
    found = hunks(BASE, PROPOSED)
    assert [(h.index, h.line, h.old, h.new) for h in found] == [
        (1, 2, ("line 2\n",), ("line two\n",)),
        (2, 18, ("line 18\n",), ("line eighteen\n",))]


def test_all_some_or_none_kept() -> None:
    assert kept_hunks(BASE, PROPOSED, PROPOSED) == [True, True]
    assert kept_hunks(BASE, PROPOSED, BASE) == [False, False]
    assert kept_hunks(BASE, PROPOSED, BASE.replace("line 2\n", "line two\n")) == [True, False]
    assert kept_hunks(BASE, PROPOSED, BASE.replace("line 18\n", "line eighteen\n")) == [
        False, True]


def test_a_text_edited_outside_the_hunks_is_neither() -> None:
    assert kept_hunks(BASE, PROPOSED, PROPOSED.replace("line 9\n", "line nine\n")) is None
    assert kept_hunks(BASE, PROPOSED, "# note\n" + BASE) is None


def test_a_hunk_edited_by_the_person() -> None:
    edited = BASE.replace("line 2\n", "line TWO\nand more\n")
    assert kept_hunks(BASE, PROPOSED, edited) == [None, False]
    assert kept_hunks(BASE, PROPOSED, PROPOSED.replace("eighteen", "18!")) == [True, None]
    assert kept_hunks(BASE, PROPOSED, PROPOSED + "more\n") is None


def test_insertions_deletions_crlf_and_no_final_newline() -> None:
    base = "a\r\nb\r\nc"
    proposed = "a\r\nnew\r\nb\r\nc\r\n"
    assert kept_hunks(base, proposed, proposed) == [True, True]
    assert kept_hunks(base, proposed, "a\r\nnew\r\nb\r\nc") == [True, False]
    assert kept_hunks(base, proposed, base) == [False, False]
    assert kept_hunks("x\ny\nz\n", "x\nz\n", "x\nz\n") == [True]
    assert kept_hunks("x\ny\nz\n", "x\nz\n", "x\ny\nz\n") == [False]


def test_repeated_lines_are_not_confused() -> None:
    base = "}\n}\n}\n"
    proposed = "}\n}\nx\n}\n"
    assert kept_hunks(base, proposed, proposed) == [True]
    assert kept_hunks(base, proposed, base) == [False]


def test_two_thousand_hunks() -> None:
    base = "".join(f"{i}\n" for i in range(6000))
    proposed = "".join(f"{i}{'!' if i % 3 == 0 else ''}\n" for i in range(6000))
    choice = [i % 2 == 0 for i in range(2000)]
    now = "".join(f"{i}{'!' if i % 3 == 0 and choice[i // 3] else ''}\n" for i in range(6000))
    assert kept_hunks(base, proposed, now) == choice


@given(st.lists(st.sampled_from(["a\n", "b\n", "c\n", "\n"]), max_size=12),
       st.lists(st.sampled_from(["a\n", "b\n", "x\n", "\n"]), max_size=12),
       st.integers(min_value=0))
def test_any_subset_of_hunks_is_recognised(base_lines: list[str], new_lines: list[str],
                                           seed: int) -> None:
    base, proposed = "".join(base_lines), "".join(new_lines)
    found = hunks(base, proposed)
    subsets = list(itertools.product([True, False], repeat=len(found)))
    choice = subsets[seed % len(subsets)]
    # The text with exactly the chosen hunks applied, built from the base's lines.
    lines = base_lines[:]
    for h, keep in sorted(zip(found, choice, strict=True), key=lambda p: -p[0].line):
        if keep:
            lines[h.line - 1:h.line - 1 + len(h.old)] = list(h.new)
    now = "".join(lines)
    result = kept_hunks(base, proposed, now)
    assert result is not None
    assert hunks_and_kept(base, proposed, now) == (found, result)
    # Ambiguous texts may be read another way, but must rebuild the same text.
    rebuilt = base_lines[:]
    for h, keep in sorted(zip(found, result, strict=True), key=lambda p: -p[0].line):
        if keep:
            rebuilt[h.line - 1:h.line - 1 + len(h.old)] = list(h.new)
    assert "".join(rebuilt) == now
