"""LSP positions and text offsets both ways (agentls/base/text_positions.py)."""

from __future__ import annotations

import random

from agentls.base.text_positions import LineStarts, Positions, code_points, units_of


def naive_start(text: str, line: int) -> int | None:
    lines = text.split("\n")
    return None if line >= len(lines) else sum(len(part) + 1 for part in lines[:line])


def test_line_starts_follow_edits_between_versions() -> None:
    rng = random.Random(7)
    text = "".join(f"line {i} = {i}\n" for i in range(300))
    starts = LineStarts()
    for _ in range(500):
        line = rng.randrange(0, 320)
        if rng.random() < 0.6:  # an edit somewhere, as pygls makes a new text each time
            at = rng.randrange(0, len(text) + 1)
            text = text[:at] + rng.choice(["x", "\n", "ab\r\ncd", "", "é🎉"]) + text[at:]
        assert starts.line_start(text, line) == naive_start(text, line), line


def test_offsets_in_each_encoding_and_clamped() -> None:
    text = "a = '日本🎉'\r\nb = 2\n"
    starts = LineStarts()
    line = "a = '日本🎉'"
    assert starts.offset(text, 0, len(line.encode("utf-16-le")) // 2, "utf-16") == len(line)
    assert starts.offset(text, 0, len(line.encode()), "utf-8") == len(line)
    assert starts.offset(text, 0, 999, "utf-16") == len(line)  # past the end of the line
    assert starts.offset(text, 99, 0, "utf-16") == len(text)  # past the last line
    assert code_points("🎉x", 1, "utf-16") == 0  # inside a surrogate pair: before it


def test_positions_of_offsets_in_each_encoding_and_every_line_ending() -> None:
    text = "a\r\nb\rc\n日🎉x"
    positions = Positions(text, "utf-16")
    assert positions.at(text.index("b")) == (1, 0)  # after "\r\n"
    assert positions.at(text.index("c")) == (2, 0)  # a lone "\r" ends a line, as in LSP
    assert positions.at(text.index("x")) == (3, 3)  # 日 is one unit, 🎉 two in UTF-16
    assert Positions(text, "utf-8").at(text.index("x")) == (3, 7)
    assert Positions(text, "utf-32").at(text.index("x")) == (3, 2)
    assert units_of("\ud800", "utf-16") == 1  # a lone surrogate is counted, not refused


def test_an_offset_and_its_position_round_trip() -> None:
    text = "x = '日本'\ny = '🎉🎉'\n"
    starts = LineStarts()
    for encoding in ("utf-8", "utf-16", "utf-32"):
        positions = Positions(text, encoding)
        for offset in range(len(text) + 1):
            line, character = positions.at(offset)
            assert starts.offset(text, line, character, encoding) == offset, (encoding, offset)
