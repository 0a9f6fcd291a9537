"""The `@` mentions' file list (engine/prompt/mentions.py): the fence's visible files only,
display paths per root, cut at MAX_FILES over all roots together (and said to be cut)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentls.engine.prompt import mentions
from agentls.workspace.fence import Workspace


def write(path: Path, text: str = "x\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture(autouse=True)
def fresh_listings() -> None:
    mentions._listings.clear()


def test_only_visible_files_in_walk_order(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / ".gitignore", "build/\n*.log\n")
    write(root / "b.py")
    write(root / "a.py")
    write(root / "run.log")
    write(root / "build" / "out.py")
    write(root / ".env", "KEY=1\n")
    write(root / "src" / "z.py")
    write(root / "src" / "deep" / "m.py")
    files, cut = mentions.workspace_files(Workspace([root]))
    assert files == [".gitignore", "a.py", "b.py", "src/z.py", "src/deep/m.py"]
    assert cut is False


def test_the_cut_counts_every_root_together(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for i in range(3):
        write(one / f"f{i}.py")
        write(two / f"g{i}.py")
    ws = Workspace([one, two])
    everything, cut = mentions.workspace_files(ws)
    assert cut is False and len(everything) == 6
    assert all(path.startswith(("one/", "two/")) for path in everything)
    mentions._listings.clear()
    monkeypatch.setattr(mentions, "MAX_FILES", 4)
    files, cut = mentions.workspace_files(ws)
    assert files == everything[:4] and cut is True
