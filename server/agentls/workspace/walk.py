"""The fence's visible files, walked (the index's full update, the ``@`` mentions' file list)
or looked up (the paths an editor saved)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from agentls.workspace.fence import Workspace


def visible_files(workspace: Workspace) -> Iterator[tuple[str, Path]]:
    """(display path, path) of every visible file under the roots (call it inside
    ``workspace.listing()``)."""
    seen: set[str] = set()
    for root in workspace.roots:
        yield from _walk_folder(workspace, str(root), seen)


def _walk_folder(ws: Workspace, folder: str, seen: set[str]) -> Iterator[tuple[str, Path]]:
    """The visible files under ``folder`` (a real path), as ``os.walk`` gives them: a
    folder's files by name, then its folders by name; linked folders are not entered, a
    file reached twice through links counts once. Entries are checked with
    ``is_visible_entry``, which resolves only links (``is_visible`` resolved every path:
    most of the time of refreshing a 10,000-file index that had not changed)."""
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError:
        return
    shown = ws.display_path(Path(folder))  # the files' display paths are this/name
    folders = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
            is_link = entry.is_symlink()
        except OSError:
            is_dir = is_link = False
        if is_dir:
            folders.append((entry, is_link))
            continue
        real = os.path.realpath(entry.path) if is_link else entry.path
        if real in seen or not ws.is_visible_entry(folder, entry):
            continue
        seen.add(real)
        yield (entry.name if shown == "." else f"{shown}/{entry.name}"), Path(entry.path)
    for entry, is_link in folders:
        if not is_link and ws.is_visible_entry(folder, entry):
            yield from _walk_folder(ws, entry.path, seen)


def resolve(workspace: Workspace, paths: Iterable[Path]
            ) -> tuple[list[tuple[str, Path]], list[str]]:
    """(visible files, display paths that are gone or now fenced off)."""
    present, gone = [], []
    for path in paths:
        display = workspace.display_path(path)
        if path.is_file() and workspace.is_visible(path):
            present.append((display, path))
        else:
            gone.append(display)
    return present, gone
