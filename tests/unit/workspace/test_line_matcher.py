"""The line matcher gives difflib's answers: same matching blocks, so the same hunks."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentls.workspace.line_diff as line_diff
import agentls.workspace.line_matcher as line_matcher
from agentls.workspace.kept_hunks import hunks, kept_hunks
from agentls.workspace.line_diff import line_opcodes
from agentls.workspace.line_matcher import LineMatcher

# Few distinct lines make repeated ones (blank, "}"), which is where matchers disagree.
LINE = st.sampled_from(["a\n", "b\n", "c\n", "}\n", "\n", "    return x\n"])


@st.composite
def edited(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """A base and the base after random edits: replace, insert, delete, move or copy lines,
    sometimes with many repeated lines so autojunk takes the popular ones out."""
    base = draw(st.lists(st.one_of(LINE, st.integers(0, 500).map(lambda n: f"v{n}\n")),
                         max_size=120))
    if draw(st.booleans()):
        base = base + ["\n"] * draw(st.integers(0, 250))  # > 200 lines: autojunk applies
        base = draw(st.permutations(base))
    new = list(base)
    for _ in range(draw(st.integers(0, 12))):
        at = draw(st.integers(0, len(new)))
        size = draw(st.integers(1, 4))
        kind = draw(st.sampled_from(["replace", "insert", "delete", "copy"]))
        if kind == "replace":
            new[at:at + size] = draw(st.lists(LINE, min_size=1, max_size=size))
        elif kind == "insert":
            new[at:at] = draw(st.lists(LINE, min_size=1, max_size=size))
        elif kind == "delete":
            del new[at:at + size]
        else:
            source = draw(st.integers(0, len(new)))
            new[at:at] = new[source:source + size]
    return base, new


@settings(max_examples=400, deadline=None)
@given(edited(), st.booleans())
def test_the_same_blocks_as_difflib(pair: tuple[list[str], list[str]], autojunk: bool) -> None:
    a, b = pair
    expected = difflib.SequenceMatcher(None, a, b, autojunk).get_matching_blocks()
    assert LineMatcher(a, b, autojunk).get_matching_blocks() == expected
    # Most windows are left to difflib's scan: without that, every window goes by the heap.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(line_matcher, "_SCAN_LIMIT", 0)
        patch.setattr(line_matcher, "_LOPSIDED_SPLITS", 0)
        assert LineMatcher(a, b, autojunk).get_matching_blocks() == expected


class _Difflib(difflib.SequenceMatcher[str]):
    """What line_diff used before the line matcher."""

    def __init__(self, a: list[str], b: list[str], autojunk: bool = True) -> None:
        super().__init__(None, a, b, autojunk)


@settings(max_examples=200, deadline=None)
@given(edited(), st.data())
def test_the_same_hunks_and_kept_hunks_as_before(pair: tuple[list[str], list[str]],
                                                 data: st.DataObject) -> None:
    a, b = pair
    base, proposed = "".join(a), "".join(b)
    found = hunks(base, proposed)
    choice = data.draw(st.lists(st.booleans(), min_size=len(found), max_size=len(found)))
    lines = list(a)
    for h, keep in sorted(zip(found, choice, strict=True), key=lambda p: -p[0].line):
        if keep:
            lines[h.line - 1:h.line - 1 + len(h.old)] = list(h.new)
    now = "".join(lines)
    new = (line_opcodes(a, b), found, kept_hunks(base, proposed, now))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(line_diff, "LineMatcher", _Difflib)
        old = (line_opcodes(a, b), hunks(base, proposed), kept_hunks(base, proposed, now))
    assert new == old


def test_two_thousand_scattered_hunks() -> None:
    # The shape that made difflib slow: equal blocks between changes, every tenth line.
    a = [f"big_{k} = {k}\n" for k in range(4000)]
    b = [f"big_{k} = {k}{' * 2' if k % 10 == 5 else ''}\n" for k in range(4000)]
    matcher = LineMatcher(a, b)
    assert matcher.get_opcodes() == difflib.SequenceMatcher(None, a, b).get_opcodes()
    assert sum(tag == "replace" for tag, *_ in matcher.get_opcodes()) == 400
