"""Inline completion's other files (DESIGN.md decision 15): what the model may read besides
the document, and when it is gathered. The definitions the file imports (Python, inside the
fence), the other open buffers where the person worked last, far places of this buffer where
they typed, and the search index's related chunks; gathered in a thread between keystrokes,
again when the cursor leaves its block of lines or the answer grows old, so a request takes
what is ready and never waits for the disk. The front door gives what only it knows: the
roots, the fence, the editor's open buffers, the search index if one is open.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentls.engine.inline.cursor_context import imported_definitions, snippet_around
from agentls.llm.fim_templates import ContextFile

log = logging.getLogger(__name__)

RELATED_BLOCK_LINES = 25  # the other files are gathered again when the cursor leaves its block
RELATED_MAX_AGE_S = 15.0
RECENT_SPOTS = 8  # places the person typed, per document
MAX_OTHER_BUFFER = 1_000_000  # characters: larger open buffers are not quoted
MAX_READ_BYTES = 256_000  # larger files on disk are not read for their definitions


@dataclass(frozen=True)
class OpenBuffer:
    """Another document the editor has open, as the gathering thread gets it."""

    uri: str
    path: Path
    language: str
    text: str


class RelatedFiles:
    """Per document: the places the person typed, and the other files last gathered."""

    def __init__(self, *, roots: Callable[[], Sequence[Path]], visible: Callable[[Path], bool],
                 open_text: Callable[[Path], str | None],
                 search: Callable[[], Any | None],
                 spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]]) -> None:
        """``visible``: whether the fence lets a path through; ``open_text``: the editor's
        text of a file it has open (None: read the disk); ``search``: the search index, if
        one is open (called in the gathering thread); ``spawn``: run a task of the server's."""
        self._roots = roots
        self._visible = visible
        self._open_text = open_text
        self._search = search
        self._spawn = spawn
        self._recent: dict[str, deque[int]] = {}
        self._gathered: dict[str, tuple[tuple[int, int], float, list[ContextFile]]] = {}
        self._gathering: asyncio.Task[None] | None = None

    def note_spot(self, uri: str, line: int) -> None:
        """The person typed at ``line``: a new place unless it is in the last one's block."""
        spots = self._recent.setdefault(uri, deque(maxlen=RECENT_SPOTS))
        if not spots or abs(spots[-1] - line) > RELATED_BLOCK_LINES:
            spots.append(line)

    def files(self, uri: str, path: Path | None, text: str, language: str, line: int,
              others: Callable[[], list[OpenBuffer]], open_count: int) -> list[ContextFile]:
        """What is ready for this document now; a new gathering starts (one at a time) when
        the cursor left its block, the editor opened or closed a document, or it is old.
        ``others``: the other open buffers (fenced, called now, on the event loop)."""
        block = (line // RELATED_BLOCK_LINES, open_count)
        cached = self._gathered.get(uri)
        fresh = cached is not None and cached[0] == block and (
            time.monotonic() - cached[1] < RELATED_MAX_AGE_S)
        if not fresh and (self._gathering is None or self._gathering.done()):
            # The places typed are read now, on the event loop that records them.
            buffers = [(other, tuple(self._recent.get(other.uri, ()))) for other in others()]
            own = tuple(self._recent.get(uri, ()))
            self._gathering = self._spawn(self._gather(uri, path, text, language, line, block,
                                                       buffers, own))
        return cached[2] if cached is not None else []

    def forget(self, uri: str) -> None:
        self._recent.pop(uri, None)
        self._gathered.pop(uri, None)

    async def _gather(self, uri: str, path: Path | None, text: str, language: str, line: int,
                      block: tuple[int, int], others: list[tuple[OpenBuffer, tuple[int, ...]]],
                      own: tuple[int, ...]) -> None:
        files = await asyncio.to_thread(self._gather_files, uri, path, text, language, line,
                                        others, own)
        self._gathered[uri] = (block, time.monotonic(), files)

    def _gather_files(self, uri: str, own_path: Path | None, text: str, language: str,
                      line: int, others: list[tuple[OpenBuffer, tuple[int, ...]]],
                      own: tuple[int, ...]) -> list[ContextFile]:
        """In a thread: imported definitions, recent places in other buffers and in this one,
        the search index's related chunks; each part on its own (a failure leaves it out)."""
        files: list[ContextFile] = []
        if language == "python" and own_path is not None:
            try:
                files += imported_definitions(text, lambda m: self._module_file(m, own_path),
                                              self._read_small, self.relative)
            except Exception:
                log.exception("inline completion: reading the imports' definitions failed")
        by_language = sorted(others, key=lambda o: (o[0].language != language, -len(o[1])))
        for other, spots in by_language[:4]:
            where = spots[-1] if spots else 0
            files.append(ContextFile(self.relative(other.path), snippet_around(other.text, where)))
        for spot in own:
            if abs(spot - line) > 2 * RELATED_BLOCK_LINES:
                files.append(ContextFile(self.relative(own_path) if own_path else uri,
                                         snippet_around(text, spot, 16)))
        files += self._index_snippets(text, line)
        return files

    def _index_snippets(self, text: str, line: int) -> list[ContextFile]:
        query = snippet_around(text, line, 6)
        try:
            search = self._search()
            if search is None:
                return []
            result = search.search(query, 3)
        except Exception as exc:  # the completion goes on without them
            log.debug("inline completion: the search index gave nothing: %s", exc)
            return []
        return [ContextFile(f"{hit.path}:{hit.start_line}-{hit.end_line}", hit.snippet)
                for hit in result.hits]

    def relative(self, path: Path) -> str:
        """A path as the model sees it: relative to the root that holds it."""
        for root in self._roots():
            try:
                return path.relative_to(root).as_posix()
            except ValueError:
                continue
        return path.name

    def _module_file(self, module: str, own: Path) -> Path | None:
        relative = Path(*module.lstrip(".").split(".")) if module.strip(".") else None
        if relative is None:
            return None
        roots = self._roots()
        for base in [own.parent, *roots, *(r / "src" for r in roots)]:
            for candidate in (base / f"{relative}.py", base / relative / "__init__.py"):
                if candidate.is_file() and self._visible(candidate):
                    return candidate
        return None

    def _read_small(self, path: Path) -> str | None:
        text = self._open_text(path)
        if text is not None:
            return text
        try:
            if path.stat().st_size > MAX_READ_BYTES:
                return None
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
