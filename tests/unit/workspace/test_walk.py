"""The walk of the fence (workspace/walk.py): the files os.walk and is_visible gave, faster."""

from __future__ import annotations

import os
from pathlib import Path

from agentls.workspace.fence import Workspace
from agentls.workspace.walk import visible_files


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _walk_as_before(ws: Workspace) -> list[tuple[str, Path]]:
    """The index's walk before issue 40's speed-up: os.walk, is_visible on every path."""
    seen: set[str] = set()
    found = []
    for root in ws.roots:
        for current, dirs, files in os.walk(root):
            here = Path(current)
            dirs[:] = sorted(d for d in dirs if ws.is_visible(here / d))
            for name in sorted(files):
                full = here / name
                real = os.path.realpath(full)
                if real in seen or not ws.is_visible(full):
                    continue
                seen.add(real)
                found.append((ws.display_path(full), full))
    return found


def test_the_walk_finds_what_is_visible_as_os_walk_did(tmp_path: Path) -> None:
    """Ignored files and folders, links inside and out (to files and folders), a broken
    link, a FIFO, the index's own folder: the same files, in the same order."""
    root = tmp_path / "repo"
    outside = tmp_path / "outside"
    write(outside / "secret.py", "KEY = 1\n")
    write(root / ".gitignore", "build/\n*.log\n")
    for name in ("b.py", "a.py", "src/z/deep.py", "src/m.py", "build/gen.py", "run.log",
                 ".agentls/index.db", "docs/guide.md", ".env"):
        write(root / name, f"# {name}\n")
    (root / "src/alias.py").symlink_to(root / "a.py")
    (root / "src/leak.py").symlink_to(outside / "secret.py")
    (root / "linked_dir").symlink_to(root / "src")
    (root / "outside_dir").symlink_to(outside)
    (root / "broken.py").symlink_to(root / "missing.py")
    os.mkfifo(root / "pipe")
    ws = Workspace([root])
    with ws.listing():
        walked = list(visible_files(ws))
    assert walked == _walk_as_before(ws)
    shown = [display for display, _ in walked]
    assert "a.py" in shown and "src/z/deep.py" in shown and "build/gen.py" not in shown
    assert not any("secret" in s or "leak" in s or s.startswith("linked_dir") for s in shown)
    write(tmp_path / "second" / "lib" / "c.py", "C = 3\n")
    two = Workspace([root, tmp_path / "second"])  # several roots: labelled display paths
    with two.listing():
        walked = list(visible_files(two))
    assert walked == _walk_as_before(two) and "second/lib/c.py" in dict(walked)
