"""Inline completion's other files (agentls/engine/inline/related_files.py): what is gathered,
from where, and when a request gets it."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from agentls.engine.inline.related_files import RELATED_BLOCK_LINES, OpenBuffer, RelatedFiles


def related(root: Path, *, hidden: frozenset[Path] = frozenset(),
            open_texts: dict[Path, str] | None = None,
            tasks: list[asyncio.Task[None]] | None = None) -> RelatedFiles:
    def spawn(coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coroutine)
        if tasks is not None:
            tasks.append(task)
        return task

    return RelatedFiles(roots=lambda: [root], visible=lambda p: p not in hidden,
                        open_text=lambda p: (open_texts or {}).get(p), search=lambda: None,
                        spawn=spawn)


def test_imported_definitions_other_buffers_and_far_places(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "shapes.py").write_text(
        "def area(width: int, height: int) -> int:\n    \"\"\"The area.\"\"\"\n    return 0\n")
    (tmp_path / "secret.py").write_text("def token() -> str:\n    return 'x'\n")
    own = tmp_path / "main.py"
    text = "from pkg.shapes import area\nfrom secret import token\n" + "x = 1\n" * 200
    files = related(tmp_path, hidden=frozenset({tmp_path / "secret.py"}))
    files.note_spot("file:///main.py", 150)
    files.note_spot("file:///main.py", 2)
    files.note_spot("file:///other.js", 40)
    others = [(OpenBuffer("file:///other.js", tmp_path / "other.js", "javascript",
                          "let y = 2;\n" * 60), (40,)),
              (OpenBuffer("file:///util.py", tmp_path / "util.py", "python", "z = 3\n"), ())]
    gathered = files._gather_files("file:///main.py", own, text, "python", 2, others, (150, 2))
    names = [f.path for f in gathered]
    assert any("area(width: int, height: int)" in f.text for f in gathered)  # imported
    assert not any("token" in f.text for f in gathered)  # a fenced module is not read
    assert names.index("util.py") < names.index("other.js")  # the same language first
    assert "main.py" in names  # line 150 is far from the cursor at line 2


async def test_a_request_takes_what_is_ready_and_a_new_block_gathers_again(
        tmp_path: Path) -> None:
    tasks: list[asyncio.Task[None]] = []
    files = related(tmp_path, tasks=tasks)
    others = [OpenBuffer("file:///b.py", tmp_path / "b.py", "python", "b = 1\n")]
    args = ("file:///a.py", tmp_path / "a.py", "a = 1\n", "python")
    assert files.files(*args, 0, lambda: others, 2) == []  # nothing ready: not waited for
    await asyncio.gather(*tasks)
    assert [f.path for f in files.files(*args, 1, lambda: others, 2)] == ["b.py"]
    assert len(tasks) == 1  # same block, fresh: no new gathering
    files.files(*args, 3 * RELATED_BLOCK_LINES, lambda: others, 2)
    assert len(tasks) == 2  # the cursor left its block
    await asyncio.gather(*tasks)
    files.forget("file:///a.py")
    assert files.files(*args, 0, lambda: [], 1) == []
