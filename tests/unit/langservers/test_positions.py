"""The model's 1-based line and character columns to LSP's UTF-16 positions and back, as
the fleet converts them (through base/text_positions.py, the one copy of the arithmetic)."""

from __future__ import annotations

from agentls.langservers.fleet import column_of, position_at


def test_columns_count_characters_and_positions_count_utf16_units() -> None:
    text = "x = 1\ns = '🎉é' + name\n"
    # Column 9 of line 2 (the space after '🎉é'): 8 characters before it, 9 UTF-16 units.
    position = position_at(text, 2, 9)
    assert (position.line, position.character) == (1, 9)
    assert column_of("s = '🎉é' + name", 9) == 8
    assert column_of("s = '🎉é' + name", 6) == 5  # inside the surrogate pair: before it
    assert column_of("abc", 99) == 3  # past the end of the line: its end


def test_out_of_range_lines_and_columns_are_clamped() -> None:
    assert position_at("a\n", 0, 0).line == 0
    far = position_at("a\n", 9, 4)
    assert (far.line, far.character) == (8, 0)
