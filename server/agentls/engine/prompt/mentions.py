"""Completion candidates for mentions typed in a chat input: ``#buffer``, ``#selection``,
``#diagnostics``, ``#changes``, ``#file:<path>``, ``@<symbol>``.

One implementation for every client: each candidate carries the mention text to insert and
the reference (engine/prompt/references.py) to send with the turn. Files are the ones the fence
shows (ignored and denied files are never offered); symbols come from the workspace's
search index. Blocking (walks the workspace, queries the index): call it off the event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentls.workspace.fence import Workspace
from agentls.workspace.walk import visible_files

if TYPE_CHECKING:
    from agentls.index.service import WorkspaceSearch

MAX_FILES = 20_000  # files walked for candidates; a bigger workspace is cut (said in detail)
LISTING_TTL_S = 10.0

_FIXED = (
    ("buffer", "the current buffer (its unsaved text)"),
    ("selection", "the selected lines"),
    ("diagnostics", "the editor's diagnostics (errors, warnings)"),
    ("changes", "the uncommitted changes (git diff HEAD)"),
)


@dataclass
class _Listing:
    at: float
    files: list[str]
    cut: bool


_listings: dict[tuple[str, ...], _Listing] = {}


def workspace_files(ws: Workspace) -> tuple[list[str], bool]:
    """The workspace's visible files (display paths), at most MAX_FILES; kept 10 s."""
    key = tuple(str(r) for r in ws.roots)
    found = _listings.get(key)
    if found is not None and time.monotonic() - found.at < LISTING_TTL_S:
        return found.files, found.cut
    files: list[str] = []
    cut = False
    with ws.listing():
        for display, _path in visible_files(ws):
            if len(files) == MAX_FILES:
                cut = True
                break
            files.append(display)
    _listings[key] = _Listing(time.monotonic(), files, cut)
    return files, cut


def _score(query: str, path: str) -> float | None:
    """Lower is better; None: no match. Substring of the name, then of the path, then the
    query's characters in order."""
    if not query:
        return float(len(path))
    q, p = query.lower(), path.lower()
    name = p.rsplit("/", 1)[-1]
    if name.startswith(q):
        return 0 + len(p) / 1000
    if q in name:
        return 1 + len(p) / 1000
    if q in p:
        return 2 + len(p) / 1000
    at = 0
    for ch in q:
        at = p.find(ch, at)
        if at < 0:
            return None
        at += 1
    return 3 + len(p) / 1000


def candidates(query: str, kinds: tuple[str, ...], limit: int, ws: Workspace,
               symbols: Callable[[], WorkspaceSearch] | None) -> list[dict[str, Any]]:
    """Mention candidates for what was typed after the trigger (``#``/``@``), best first."""
    text = query.strip()
    items: list[dict[str, Any]] = []
    bare = text.split(":", 1)[0].lower()
    for kind, detail in _FIXED:
        if kind in kinds and kind.startswith(bare) and ":" not in text:
            items.append({"label": kind, "text": f"#{kind}", "kind": kind, "detail": detail,
                          "reference": {"kind": kind}})
    file_query = text[5:] if text.lower().startswith("file:") else text
    if "file" in kinds and ("file".startswith(bare) or text.lower().startswith("file:")
                            or file_query):
        files, cut = workspace_files(ws)
        scored = sorted((s, f) for f in files if (s := _score(file_query, f)) is not None)
        for _, path in scored[:limit]:
            items.append({"label": f"file:{path}", "text": f"#file:{path}", "kind": "file",
                          "detail": "file" + (" (first 20,000 files searched)" if cut else ""),
                          "reference": {"kind": "file", "path": path}})
    if "symbol" in kinds and symbols is not None and len(file_query) >= 2 \
            and not text.lower().startswith("file:"):
        try:
            hits = symbols().search(file_query, 20, lexical_only=True).hits
        except Exception:  # no index yet, or it cannot open: no symbol candidates
            hits = []
        seen: set[str] = set()
        for hit in hits:
            for start, _, symbol in hit.spans():
                if not symbol or symbol in seen:
                    continue
                seen.add(symbol)
                items.append({"label": symbol, "text": f"@{symbol}", "kind": "symbol",
                              "detail": f"{hit.path}:{start}",
                              "reference": {"kind": "symbol", "name": symbol}})
    return items[:limit]
