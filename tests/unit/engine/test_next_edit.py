"""The next-edit engine's parts without a server: recent edits as diffs, the editable region,
the prompts and reading the model's rewrite back, hunks, and the predictor's slot with a
scripted stream (no model)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentls.engine.next_edit.hunks import hunks, line_hunks, trimmed
from agentls.engine.next_edit.predictor import NextEditPredictor, NextEditRequest
from agentls.engine.next_edit.prompt_formats import (
    OutsideRegion,
    Unreadable,
    parse_rewrite,
    zeta_prompt,
)
from agentls.engine.next_edit.recent_edits import (
    EditHistory,
    common_prefix,
    common_suffix,
    line_diff,
)
from agentls.engine.next_edit.region import excerpt
from agentls.settings.models import NextEditConfig


def test_common_prefix_and_suffix_across_chunks() -> None:
    a = "x" * 10_000 + "a" + "y" * 9_000
    b = "x" * 10_000 + "bb" + "y" * 9_000
    assert common_prefix(a, b) == 10_000
    assert common_suffix(a, b, 10_000) == 9_000
    assert common_prefix("abc", "abc") == 3 and common_suffix("abc", "abc", 3) == 0


def test_line_diff_is_one_hunk_with_context() -> None:
    old = "a\nb\nc\nd\ne\n"
    new = "a\nb\nC\nd\ne\n"
    diff, first = line_diff("f.py", old, new) or ("", -1)
    assert first == 2
    assert diff == "@@ -1,5 +1,5 @@\n a\n b\n-c\n+C\n d\n e"
    assert line_diff("f.py", old, old) is None


def test_keystrokes_close_together_are_one_edit_far_ones_two() -> None:
    history = EditHistory()
    history.opened("u", "f.py", "def f(count):\n    return count\n\n\n\n\nx = 1\n")
    text = "def f(count):\n    return count\n\n\n\n\nx = 1\n"
    for step, typed in enumerate(["t", "to", "tot"]):
        text = text.replace(text.split("(")[1].split(")")[0], typed, 1)
        history.changed("u", "f.py", text, [(0, 0)], now=float(step))
    (typing,) = history.recent("u")
    assert "-def f(count):\n+def f(tot):" in typing.diff
    text = text.replace("x = 1", "x = 2")
    history.changed("u", "f.py", text, [(6, 6)], now=3.0)  # far below: a new edit
    first, second = history.recent("u")
    assert "+def f(tot):" in first.diff and "-x = 1\n+x = 2" in second.diff
    text = text.replace("x = 2", "x = 3")
    history.changed("u", "f.py", text, [(6, 6)], now=30.0)  # after a pause: a new edit
    *_, before_pause, after_pause = history.recent("u")
    assert "+x = 2" in before_pause.diff and "-x = 2\n+x = 3" in after_pause.diff


def test_whole_document_changes_find_their_lines() -> None:
    history = EditHistory()
    history.opened("u", "f.py", "a\nb\nc\n")
    history.changed("u", "f.py", "a\nB\nc\n", now=0.0)
    (edit,) = history.recent("u")
    assert "-b\n+B" in edit.diff and edit.first_line == 1


def test_the_region_grows_around_the_cursor_within_budgets() -> None:
    text = "".join(f"line {i}\n" for i in range(1000))
    cursor = text.index("line 500")
    cut = excerpt(text, cursor, 40, 20)
    assert cut.start < cursor < cut.end
    assert cut.region.startswith("line ") and cut.region.count("\n") < 40
    assert text[cut.context_start:cut.start].count("\n") >= 1
    assert cut.above.endswith("\n") and cut.below.startswith("\n")
    head = excerpt(text, 0, 40, 20)
    assert head.at_file_start and head.start == 0


def test_zeta_prompt_and_its_answer() -> None:
    text = "import os\n\ndef f(total):\n    return count\n\nprint(f(1))\n"
    cut = excerpt(text, text.index("total") + 5, 12, 4)
    prompt = zeta_prompt("f.py", cut, [])
    assert "### User Excerpt:\n\n```f.py\n" in prompt.text
    assert "def f(total<|user_cursor_is_here|>):" in prompt.text
    answer = (f"```f.py\n{cut.above}<|editable_region_start|>\n"
              f"{cut.region.replace('count', 'total')}\n<|editable_region_end|>{cut.below}\n```")
    assert parse_rewrite(answer, cut) == cut.region.replace("count", "total")
    # stopped at the end marker, or mid-line in the context below: still read
    assert parse_rewrite(answer.split("<|editable_region_end|>")[0]
                         + "<|editable_region_end|>", cut) == cut.region.replace("count",
                                                                                 "total")


def test_answers_that_are_refused() -> None:
    text = "".join(f"v{i} = {i}\n" for i in range(30))
    cut = excerpt(text, text.index("v15"), 12, 12)
    region = cut.region
    with pytest.raises(Unreadable):
        parse_rewrite("no markers at all", cut)
    with pytest.raises(Unreadable):
        parse_rewrite("<|editable_region_start|>\nx\n<|editable_region_end|>"
                      "<|editable_region_end|>", cut)
    below = cut.below.lstrip("\n").replace("=", "==", 1)
    with pytest.raises(OutsideRegion):
        parse_rewrite(f"<|editable_region_start|>\n{region}\n<|editable_region_end|>\n"
                      f"{below}", cut)
    above = cut.above.replace("=", "==", 1)
    with pytest.raises(OutsideRegion):
        parse_rewrite(f"```f.py\n{above}<|editable_region_start|>\n{region}\n"
                      "<|editable_region_end|>", cut)


def test_hunks_line_for_line_insertions_and_deletions() -> None:
    old = "a = count\nb = count\nc = 1"
    new = "a = total\nb = total\nc = 1"
    found = hunks(old, new)
    assert [(old[h.start:h.end], h.text) for h in found] == [("count", "total")] * 2
    assert found[0].start == 4 and found[1].start == 14
    (insert,) = hunks("a\nc", "a\nb\nc")
    assert (insert.start, insert.end, insert.text) == (2, 2, "b\n")
    (delete,) = hunks("a\nb", "a")
    assert "a\nb"[:delete.start] + delete.text + "a\nb"[delete.end:] == "a"
    assert hunks(old, old) == []


def apply(old: str, found: list[Any]) -> str:
    """All hunks applied at once, each range in ``old``'s offsets (as an LSP edit's are)."""
    out, done = [], 0
    for h in found:
        assert done <= h.start <= h.end <= len(old)
        out += [old[done:h.start], h.text]
        done = h.end
    return "".join(out) + old[done:]


def test_lines_added_after_a_last_line_without_a_line_break() -> None:
    assert apply("a\nb", hunks("a\nb", "a\nb\n")) == "a\nb\n"
    assert apply("a\nb", hunks("a\nb", "a\nb\nc\nd")) == "a\nb\nc\nd"
    assert apply("", hunks("", "\n\n")) == "\n\n"


_LINES = st.lists(st.sampled_from(["", "a", "b", "total", "x = 1"]), max_size=6)


@given(_LINES, _LINES, st.booleans(), st.booleans())
def test_hunks_applied_to_the_old_text_give_the_new(old_lines: list[str], new_lines: list[str],
                                                    old_break: bool, new_break: bool) -> None:
    old = "\n".join(old_lines) + ("\n" if old_break else "")
    new = "\n".join(new_lines) + ("\n" if new_break else "")
    assert apply(old, hunks(old, new)) == new


def test_line_hunks_cut_one_at_a_time_are_the_hunks() -> None:
    cases = [("a = count\nb = count\nc = 1", "a = total\nb = total\nc = 1"),
             ("a\nc", "a\nb\nc"), ("a\nb", "a"), ("x", "y\nx"),
             ("def f(a):\n    return a\n", "def f(b):\n    return b\n\nf(1)")]
    for old, new in cases:
        whole = line_hunks(old, new)
        assert [trimmed(old, h) for h in whole] == hunks(old, new)
        for h, cut in zip(whole, hunks(old, new), strict=True):
            assert h.lines == cut.lines and h.end >= cut.end  # what the pick relies on


def test_the_pick_cuts_past_a_line_that_ends_before_the_cursor_once_cut() -> None:
    region = "a = count\nb = count\nc = 1"
    predictor = NextEditPredictor()
    request = NextEditRequest(uri="file:///f.py", path="f.py", version=1, text=region,
                              cursor=10)  # line 0's end as a whole line, after its cut hunk
    found = line_hunks(region, "a = total\nb = total\nc = 1")
    suggestion = predictor._pick(request, 0, region, found)
    assert suggestion is not None and (suggestion.start, suggestion.text) == (14, "total")
    late = NextEditRequest(uri="file:///f.py", path="f.py", version=1, text=region, cursor=22)
    last = predictor._pick(late, 0, region, found)  # none at or after: the last
    assert last is not None and (last.start, last.old) == (14, "count")


class ScriptedClient:
    """Stands in for FimClient: streams a fixed answer, slowly if asked; records closes."""

    def __init__(self, answer: str, delay: float = 0.0) -> None:
        self.answer, self.delay = answer, delay
        self.requests: list[Any] = []
        self.closed = 0

    async def stream(self, request: Any, finish: list[str] | None = None
                     ) -> AsyncGenerator[str, None]:
        self.requests.append(request)
        try:
            for i in range(0, len(self.answer), 8):
                await asyncio.sleep(self.delay)
                yield self.answer[i:i + 8]
            if finish is not None:
                finish.append("stop")
        finally:
            self.closed += 1

    async def aclose(self) -> None:
        return None


def rewrite_of(text: str, cursor: int, old: str, new: str) -> str:
    cut = excerpt(text, cursor, 350, 150)
    return (f"<|editable_region_start|>\n{cut.region.replace(old, new)}\n"
            "<|editable_region_end|>")


async def test_a_newer_request_closes_the_older_stream() -> None:
    text = "def f(total):\n    return count\n"
    client = ScriptedClient(rewrite_of(text, 11, "count", "total"), delay=0.05)
    predictor = NextEditPredictor()
    predictor.configure(NextEditConfig(model="m", debounce_ms=0), client, "m")  # type: ignore[arg-type]
    request = NextEditRequest("u", "f.py", 1, text, 11)
    first = asyncio.ensure_future(predictor.suggest(request, lambda: 1))
    await asyncio.sleep(0.08)
    second = await predictor.suggest(request, lambda: 1)
    assert await first is None
    assert second is not None and second.text == "total"
    assert predictor.counters.superseded == 1 and client.closed == 2


async def test_an_answer_for_a_version_gone_is_dropped() -> None:
    text = "def f(total):\n    return count\n"
    client = ScriptedClient(rewrite_of(text, 11, "count", "total"))
    predictor = NextEditPredictor()
    predictor.configure(NextEditConfig(model="m", debounce_ms=0), client, "m")  # type: ignore[arg-type]
    versions = iter([1, 2])  # before the model request, then after its answer
    suggestion = await predictor.suggest(NextEditRequest("u", "f.py", 1, text, 11),
                                         lambda: next(versions))
    assert suggestion is None and predictor.counters.stale == 1


async def test_a_server_that_stops_at_the_end_marker() -> None:
    """`stop` = the end marker: the server ends the stream before it (finish "stop")."""
    text = "def f(total):\n    return count\n"
    whole = rewrite_of(text, 11, "count", "total")
    client = ScriptedClient(whole.split("<|editable_region_end|>")[0])
    predictor = NextEditPredictor()
    predictor.configure(NextEditConfig(model="m", debounce_ms=0), client, "m")  # type: ignore[arg-type]
    suggestion = await predictor.suggest(NextEditRequest("u", "f.py", 1, text, 11), lambda: 1)
    assert suggestion is not None and suggestion.text == "total"
    assert client.requests[0].stop == ("<|editable_region_end|>",)
