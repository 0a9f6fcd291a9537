"""What the next-edit chat prompt quotes beside the excerpt, gathered between keystrokes: the
definitions of the names on the cursor's line, from the agent's language servers (issue 39's
``LangServers`` through ``Agent.code_intel``: configured ``lsp.servers`` or detected ones,
sandboxed), and the document's outline. A request takes what is ready; the rest is gathered
for the next one (up to ``DEFINITION_NAMES`` names, ``DEFINITION_TIMEOUT_S`` each,
``DEFINITION_LINES`` lines from each definition read through the fence; a definition within
``DEFINITION_NEAR_LINES`` of the cursor is in the excerpt already). Zeta's prompt has no place
for them.
"""

from __future__ import annotations

import asyncio
import keyword
import logging
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentls.lsp.services import documents

if TYPE_CHECKING:
    from agentls.base.text_positions import LineStarts
    from agentls.lsp.services.server_context import ServerContext
    from agentls.workspace.fence import Workspace

log = logging.getLogger(__name__)

OUTLINE_MAX_AGE_S = 5.0
OUTLINE_LINES = 60
MAX_OUTLINE_TEXT = 2_000_000  # characters: larger documents get no outline
DEFINITION_NAMES = 4  # names on the cursor's line whose definitions are looked up
DEFINITION_TIMEOUT_S = 5.0
DEFINITION_NEAR_LINES = 30  # a definition this close to the cursor is in the excerpt
DEFINITION_LINES = 8
DEFINITIONS_MAX_AGE_S = 10.0
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class RelatedContext:
    """Per open document: its outline and the definitions near its cursor's line, with when
    they were made (a cache the next request reads)."""

    def __init__(self, server: ServerContext, index: Callable[[str], LineStarts],
                 visible: Callable[[Path], bool], model_path: Callable[[str], str]) -> None:
        self.server = server
        self._index = index
        self._visible = visible
        self._model_path = model_path
        self._outlines: dict[str, tuple[float, list[str]]] = {}
        self._outlining: set[str] = set()
        self._definitions: dict[str, tuple[int, float, list[str]]] = {}  # uri -> line, when
        self._defining: set[str] = set()

    def forget(self, uri: str) -> None:
        """The document closed."""
        self._outlines.pop(uri, None)
        self._definitions.pop(uri, None)

    def quoted(self, uri: str, text: str, line: int, prompt_format: str) -> list[str]:
        """What the chat prompt quotes beside the excerpt: the definitions of the names on the
        cursor's line (the agent's language servers, where they cover the file) and the
        document's outline; what is ready now, the rest gathered for the next request."""
        if prompt_format != "chat":
            return []  # Zeta's prompt has no place for them
        return [*self._definitions_near(uri, text, line), *self._outline(uri, text)]

    def _definitions_near(self, uri: str, text: str, line: int) -> list[str]:
        cached = self._definitions.get(uri)
        fresh = cached is not None and cached[0] == line and (
            time.monotonic() - cached[1] < DEFINITIONS_MAX_AGE_S)
        if not fresh and uri not in self._defining and documents.path_of(uri) is not None:
            self._defining.add(uri)
            start = self._index(uri).line_start(text, line) or 0
            end = text.find("\n", start)
            line_text = text[start:end if end >= 0 else len(text)]
            self.server.spawn(self._find_definitions(uri, line, line_text))
        return cached[2] if cached is not None and cached[0] == line else []

    async def _find_definitions(self, uri: str, line: int, line_text: str) -> None:
        try:
            blocks = await self._definitions_of(uri, line, line_text)
        except Exception as exc:  # the suggestion goes on without them
            log.debug("next edit: no definitions from the language servers: %s", exc)
            blocks = []
        finally:
            self._defining.discard(uri)
        if uri in self.server.workspace.text_documents:
            self._definitions[uri] = (line, time.monotonic(), blocks)

    async def _definitions_of(self, uri: str, line: int, line_text: str) -> list[str]:
        path = documents.path_of(uri)
        if path is None or not self._visible(path):
            return []
        from agentls.engine.events import RecordingFrontend

        host = await self.server.engine()
        ws = self.server.new_workspace()
        servers = await host.agent.code_intel(ws, RecordingFrontend())
        if servers is None:
            return []  # no language server covers the workspace (lsp.servers, lsp.detect)
        own = self._model_path(uri)
        blocks: list[str] = []
        for column, name in _names(line_text)[:DEFINITION_NAMES]:
            async with asyncio.timeout(DEFINITION_TIMEOUT_S):
                answer = await servers.definition(ws, path, line + 1, column + 1)
            for place in answer.places[:1]:
                if place.path == own and abs(place.line - 1 - line) <= DEFINITION_NEAR_LINES:
                    continue  # in the excerpt already
                snippet = await asyncio.to_thread(_snippet, ws, place.path, place.line)
                if snippet:
                    blocks.append(f"{place.path}:{place.line} ({name}):\n{snippet}")
        return blocks

    def _outline(self, uri: str, text: str) -> list[str]:
        cached = self._outlines.get(uri)
        fresh = cached is not None and time.monotonic() - cached[0] < OUTLINE_MAX_AGE_S
        if not fresh and uri not in self._outlining and len(text) <= MAX_OUTLINE_TEXT:
            self._outlining.add(uri)
            self.server.spawn(self._make_outline(uri, text))
        return cached[1] if cached is not None else []

    async def _make_outline(self, uri: str, text: str) -> None:
        from agentls.engine.prompt.outline import outline_lines

        try:
            lines = await asyncio.to_thread(outline_lines, text.splitlines(), first_line=1)
        finally:
            self._outlining.discard(uri)
        if uri in self.server.workspace.text_documents:
            block = [f"{self._model_path(uri)} (outline):\n" + "\n".join(lines[:OUTLINE_LINES])]
            self._outlines[uri] = (time.monotonic(), block if lines else [])


def _names(line_text: str) -> list[tuple[int, str]]:
    """The names on a line worth a definition (column, name): once each, no keywords."""
    seen: set[str] = set()
    out = []
    for match in _NAME.finditer(line_text):
        name = match.group()
        if name in seen or keyword.iskeyword(name) or len(name) < 2:
            continue
        seen.add(name)
        out.append((match.start(), name))
    return out


def _snippet(ws: Workspace, path: str, line: int) -> str:
    """``DEFINITION_LINES`` lines from a definition's (1-based) line, read through the fence."""
    try:
        text = ws.read_text(ws.resolve(path))
    except Exception:  # fenced, gone, unreadable: left out
        return ""
    lines = text.splitlines()[max(line - 1, 0):max(line - 1, 0) + DEFINITION_LINES]
    return "\n".join(lines)
