"""Inline completion's context: windows around the cursor, other files."""

from __future__ import annotations

from pathlib import Path

from agentls.engine.inline.cursor_context import (
    fit_files,
    imported_definitions,
    indent_unit,
    window,
)
from agentls.llm.fim_templates import ContextFile


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
