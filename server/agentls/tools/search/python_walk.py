"""search_text's pure-Python engine, for machines without `rg`: walks each target in sorted
order, as ripgrep's `--sort path` does, through the fence, so both engines give one result."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from agentls.tools.search.state import SearchState, SearchTarget


def walk_python(search: SearchState, target: SearchTarget) -> None:
    with search.ws.listing():
        _walk(search, target)


def _walk(search: SearchState, target: SearchTarget) -> None:
    base = target.root / target.rel if target.rel != "." else target.root
    if base.is_file():
        files: Iterator[str] = iter([target.rel])
    else:
        files = _sorted_files(search, target.root, base)
    for rel in files:
        if search.stopped:
            return
        if not search.glob_allows(target, rel):
            continue
        source, text = search.file_source(target, rel)
        if source == "skip":
            continue
        if source == "disk":
            try:
                data = (target.root / rel).read_bytes()
            except OSError:
                continue
            if b"\0" in data:  # rg skips binary files
                continue
            text = data.decode("utf-8", errors="replace")
        search.add_text(target, rel, text)


def _sorted_files(search: SearchState, root: Path, folder: Path) -> Iterator[str]:
    """Regular files under ``folder`` in rg's `--sort path` order (component by component),
    not entering folders the fence hides. Symlinks are skipped, as rg does without `--follow`."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink():
            continue
        path = Path(entry.path)
        if entry.is_dir():
            if search.ws.is_visible(path):
                yield from _sorted_files(search, root, path)
        elif entry.is_file():
            yield path.relative_to(root).as_posix()
