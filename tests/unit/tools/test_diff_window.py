"""The windowed unified diff reads as the whole file's diff, and is a true diff."""

from __future__ import annotations

import difflib
import random
import re

import pytest

from agentls.tools.edit.diff_window import unified_diff

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$")


def whole(before: str, after: str, n: int) -> list[str]:
    return list(difflib.unified_diff(before.splitlines(), after.splitlines(), "a/f", "b/f",
                                     n=n, lineterm=""))


def apply(before: str, diff: list[str]) -> list[str]:
    lines = before.splitlines()
    out: list[str] = []
    taken = 0
    index = 2
    while index < len(diff):
        match = HUNK.match(diff[index])
        assert match, diff[index]
        old_start, old_size = int(match[1]), int(match[2] or 1)
        new_size = int(match[4] or 1)
        first = old_start - 1 if old_size else old_start
        assert first >= taken
        out += lines[taken:first]
        taken = first
        index += 1
        old_seen = new_seen = 0
        while old_seen < old_size or new_seen < new_size:
            line = diff[index]
            index += 1
            if line.startswith("+"):
                out.append(line[1:])
                new_seen += 1
                continue
            assert lines[taken] == line[1:], (taken, line)
            taken += 1
            old_seen += 1
            if line.startswith(" "):
                out.append(line[1:])
                new_seen += 1
    return out + lines[taken:]


def test_one_edit_in_a_long_file_reads_exactly_as_difflib() -> None:
    lines = [f"    value_{i} = compute({i})  # line {i}" for i in range(10_000)]
    before = "\n".join(lines) + "\n"
    lines[4_321] = "    value_4321 = compute(4321 + 1)  # line 4321"
    lines.insert(7_000, "    inserted = True")
    del lines[9_000]
    after = "\n".join(lines) + "\n"
    for n in (0, 2, 3):
        assert list(unified_diff(before, after, "a/f", "b/f", n=n)) == whole(before, after, n)


@pytest.mark.parametrize("seed", range(3))
def test_random_edits_give_a_true_diff_and_mostly_difflibs(seed: int) -> None:
    rng = random.Random(seed)
    words = ["a", "b", "", "  x", "c\r", "def f():", "\tpass", "é"]
    same = total = 0
    for _ in range(400):
        before = [rng.choice(words) + (str(rng.randint(0, 9)) if rng.random() < 0.5 else "")
                  for _ in range(rng.randint(0, 300))]
        after = list(before)
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(after))
            if rng.random() < 0.4 and after:
                after[min(at, len(after) - 1)] = rng.choice(words) + "z"
            elif rng.random() < 0.5:
                after.insert(at, rng.choice(words))
            elif after:
                del after[min(at, len(after) - 1)]
        eol = rng.choice(["\n", "\r\n"])
        old = eol.join(before) + (eol if rng.random() < 0.8 else "")
        new = eol.join(after) + (eol if rng.random() < 0.8 else "")
        n = rng.choice([0, 2, 3])
        diff = list(unified_diff(old, new, "a/f", "b/f", n=n))
        assert apply(old, diff) == new.splitlines()
        total += 1
        same += diff == whole(old, new, n)
    # Where lines repeat, a change may be placed elsewhere than difflib places it on the
    # whole file: equally true, and rare.
    assert same >= total * 0.9


def test_no_change_and_whole_file_changes() -> None:
    assert list(unified_diff("a\nb\n", "a\nb\n", "a/f", "b/f")) == []
    assert list(unified_diff("", "x\n", "a/f", "b/f")) == whole("", "x\n", 3)
    assert list(unified_diff("x\n", "", "a/f", "b/f")) == whole("x\n", "", 3)
    assert list(unified_diff("a\nb", "a\nc", "a/f", "b/f", n=0)) == whole("a\nb", "a\nc", 0)
