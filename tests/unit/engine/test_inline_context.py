"""Inline completion's context: cursor offsets across versions, windows, other files."""

from __future__ import annotations

import random
from pathlib import Path

from agentls.engine.inline.cursor_context import (
    LineStarts,
    code_points,
    fit_files,
    imported_definitions,
    indent_unit,
    window,
)
from agentls.llm.fim_templates import ContextFile


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


def test_window_is_cut_at_line_starts_within_the_budget() -> None:
    text = "".join(f"v{i} = {i}\n" for i in range(100_000))
    offset = text.index("v50000 = ")
    win = window(text, offset, 512, unit="    ", eol="\n")
    assert win.prefix.endswith("v49999 = 49999\n") and win.suffix.startswith("v50000")
    assert win.prefix[0] == "v" and len(win.prefix) + len(win.suffix) < 2000


def test_indent_unit_and_files_within_budget() -> None:
    assert indent_unit("if x:\n\ty\n\tz\n") == "\t"
    assert indent_unit("if x:\n  y\n    z\n") == "  "
    files = [ContextFile("a.py", "x" * 100), ContextFile("big.py", "y" * 100_000),
             ContextFile("b.py", "z" * 100)]
    assert [f.path for f in fit_files(files, 1536)] == ["a.py", "b.py"]


def test_imported_definitions(tmp_path: Path) -> None:
    module = tmp_path / "geometry.py"
    module.write_text('def area(w: float, h: float) -> float:\n    """The area."""\n'
                      "    return w * h\n\n\nclass Box:\n    def volume(self) -> float:\n"
                      "        return 0\n\n\ndef unused():\n    pass\n")
    found = imported_definitions(
        "from geometry import area, Box\nx = ", lambda m: tmp_path / f"{m}.py",
        lambda p: p.read_text(), lambda p: p.name)
    (snippet,) = found
    assert snippet.path == "geometry.py"
    assert "def area(w: float, h: float) -> float:" in snippet.text
    assert '"""The area."""' in snippet.text and "return w * h" not in snippet.text
    assert "class Box:" in snippet.text and "def volume(self)" in snippet.text
    assert "unused" not in snippet.text
