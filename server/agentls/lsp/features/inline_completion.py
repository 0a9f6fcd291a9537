"""Inline completion as you type: ``textDocument/inlineCompletion`` (LSP 3.18).

The LSP side of the fast path in ``engine/inline/completer.py`` (DESIGN.md decision 15): the
position in the client's encoding becomes an offset, the popup's selected item (``context.
selectedCompletionInfo``) is applied before asking, unopened, fenced and switched-off
documents get an empty answer at once, and the other files the model may read are gathered
in a thread between keystrokes (``RelatedFiles``), so a request never waits for the disk.
The status (``agentls/completionStatus``: idle, waiting, off, error) is sent only when it
changes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from agentls.lsp.services import documents
from agentls.lsp.services.protocol import COMPLETION_STATUS

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from agentls.base.text_positions import LineStarts
    from agentls.engine.inline.completer import InlineCompleter, Status
    from agentls.llm.fim_templates import ContextFile
    from agentls.lsp.services.server_context import ServerContext
    from agentls.workspace.fence import Workspace

log = logging.getLogger(__name__)

RELATED_BLOCK_LINES = 25  # the other files are gathered again when the cursor leaves its block
RELATED_MAX_AGE_S = 15.0
RECENT_SPOTS = 8  # places the person typed, per document
MAX_OTHER_BUFFER = 1_000_000  # characters: larger open buffers are not quoted
COMMENTS = {"python": "#", "shellscript": "#", "ruby": "#", "yaml": "#", "toml": "#",
            "perl": "#", "r": "#", "makefile": "#", "dockerfile": "#", "lua": "--",
            "sql": "--", "haskell": "--"}
EMPTY = lsp.InlineCompletionList(items=[])


class InlineCompletionFeature:
    def __init__(self, server: ServerContext) -> None:
        self.server = server
        self.completer: InlineCompleter | None = None
        self._loading: asyncio.Future[InlineCompleter] | None = None
        self._fence: Workspace | None = None
        self._lines: dict[str, LineStarts] = {}
        self._units: dict[str, str] = {}
        self._recent: dict[str, deque[int]] = {}
        self._related: dict[str, tuple[tuple[int, int], float, list[ContextFile]]] = {}
        self._gathering: asyncio.Task[None] | None = None

    # --- settings and status ---------------------------------------------------------------------

    async def ready(self) -> InlineCompleter:
        if self.completer is not None:
            return self.completer
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._load())
        return await asyncio.shield(self._loading)

    async def _load(self) -> InlineCompleter:
        await self.server.ready()
        module = await self.server.imported("agentls.engine.inline.completer")
        completer: InlineCompleter = module.InlineCompleter(self._status)
        self.completer = completer
        self.on_settings()
        return completer

    def on_settings(self) -> None:
        completer = self.completer
        if self.server.resolved is None:
            return
        if completer is None:
            if self._loading is None:  # the first settings: the clients learn the status now
                self._loading = self.server.spawn(self._load())
            return
        from agentls.llm.fim import FimClient
        from agentls.settings import config

        settings = self.server.settings
        wanted = settings.completion
        self._fence = None
        old = completer.client
        if not wanted.active:
            completer.configure(wanted, None, "")
        else:
            name = wanted.backend or settings.backend
            backend = settings.backends[name]
            model = wanted.model or backend.model
            client = FimClient(name, backend.base_url, config.api_key(backend),
                               wanted.timeout_s)
            completer.configure(wanted, client, model)
            log.info("inline completion: model %s at %s (%s)", model, backend.base_url,
                     wanted.fim)
        if old is not None:
            self.server.spawn(old.aclose())

    def _status(self, status: Status, message: str) -> None:
        self.server.protocol.notify(COMPLETION_STATUS, {"status": status, "message": message})

    # --- the request -----------------------------------------------------------------------------

    async def answer(self, params: lsp.InlineCompletionParams) -> lsp.InlineCompletionList:
        completer = await self.ready()
        if completer.client is None:
            return EMPTY
        uri = params.text_document.uri
        document = self.server.workspace.text_documents.get(uri)
        if document is None:
            return EMPTY  # not opened: the editor tells us about the documents it shows
        if document.language_id in completer.config.disabled_languages:
            return EMPTY
        path = documents.path_of(uri)
        if path is not None and not self._visible(path):
            return EMPTY
        text = document.source
        encoding = self.server.position_encoding
        position = params.position
        offset = self._index(uri).offset(text, position.line,
                                                         position.character, encoding)
        start = position
        selected = params.context.selected_completion_info
        prefix_text = ""
        if selected is not None:
            index = self._index(uri)
            begin = index.offset(text, selected.range.start.line, selected.range.start.character,
                                 encoding)
            end = index.offset(text, selected.range.end.line, selected.range.end.character,
                               encoding)
            text = text[:begin] + selected.text + text[end:]
            offset, start, prefix_text = begin + len(selected.text), selected.range.start, (
                selected.text)
        self._note_spot(uri, position.line)
        if len(self._lines) > len(self.server.workspace.text_documents) + 8:
            self._prune()
        from agentls.engine.inline.completer import CompletionRequest

        root = self.server.root
        request = CompletionRequest(
            uri=uri, path=self._relative(path) if path else uri, repo=root.name if root else "",
            text=text, offset=offset,
            automatic=params.context.trigger_kind == lsp.InlineCompletionTriggerKind.Automatic,
            unit=self._unit(uri, text), eol="\r\n" if text.find("\r\n", 0, 10_000) >= 0 else "\n",
            comment=COMMENTS.get(document.language_id or "", "//"),
            files=self._files(uri, document, position.line))
        completion = await completer.complete(request)
        if not completion:
            return EMPTY
        return lsp.InlineCompletionList(items=[lsp.InlineCompletionItem(
            insert_text=prefix_text + completion, range=lsp.Range(start=start, end=position))])

    def _index(self, uri: str) -> LineStarts:
        index = self._lines.get(uri)
        if index is None:
            from agentls.base.text_positions import LineStarts

            index = self._lines[uri] = LineStarts()
        return index

    def _unit(self, uri: str, text: str) -> str:
        from agentls.engine.inline.cursor_context import indent_unit

        unit = self._units.get(uri)
        if unit is None:
            unit = self._units[uri] = indent_unit(text)
        return unit

    def _visible(self, path: Path) -> bool:
        if self._fence is None:
            from agentls.workspace.fence import Workspace

            roots = self.server.roots
            if not roots:
                return True  # no folder open: no fence to keep, only the editor's buffers
            self._fence = Workspace(roots)
        return self._fence.is_visible(path)

    def _relative(self, path: Path) -> str:
        for root in self.server.roots:
            try:
                return path.relative_to(root).as_posix()
            except ValueError:
                continue
        return path.name

    def _prune(self) -> None:
        """Forget what belongs to documents the editor closed."""
        open_uris = self.server.workspace.text_documents.keys()
        for uri in [u for u in self._lines if u not in open_uris]:
            for table in (self._lines, self._units, self._recent, self._related):
                table.pop(uri, None)
            if self.completer is not None:
                self.completer.forget(uri)

    # --- other files, gathered between keystrokes ---------------------------------------------

    def _note_spot(self, uri: str, line: int) -> None:
        spots = self._recent.setdefault(uri, deque(maxlen=RECENT_SPOTS))
        if not spots or abs(spots[-1] - line) > RELATED_BLOCK_LINES:
            spots.append(line)

    def _files(self, uri: str, document: TextDocument, line: int) -> list[ContextFile]:
        block = (line // RELATED_BLOCK_LINES, len(self.server.workspace.text_documents))
        cached = self._related.get(uri)
        fresh = cached is not None and cached[0] == block and (
            time.monotonic() - cached[1] < RELATED_MAX_AGE_S)
        if not fresh and (self._gathering is None or self._gathering.done()):
            self._gathering = self.server.spawn(self._gather(uri, document, line, block))
        return cached[2] if cached is not None else []

    async def _gather(self, uri: str, document: TextDocument, line: int,
                      block: tuple[int, int]) -> None:
        snapshot = self._snapshot(uri)
        engine = self.server.engine_if_built()
        files = await asyncio.to_thread(self._gather_files, uri, document.source,
                                        document.language_id or "", line, snapshot, engine)
        self._related[uri] = (block, time.monotonic(), files)

    def _snapshot(self, uri: str) -> list[tuple[str, Path, str, str, list[int]]]:
        """The other open documents (uri, path, language, text, recent lines), fenced."""
        out = []
        for other_uri, doc in list(self.server.workspace.text_documents.items()):
            path = documents.path_of(other_uri)
            if other_uri == uri or path is None or not self._visible(path):
                continue
            text = doc.source
            if len(text) <= MAX_OTHER_BUFFER:
                out.append((other_uri, path, doc.language_id or "", text,
                            list(self._recent.get(other_uri, ()))))
        return out

    def _gather_files(self, uri: str, text: str, language: str, line: int,
                      others: list[tuple[str, Path, str, str, list[int]]],
                      engine: Any) -> list[ContextFile]:
        """In a thread: imported definitions, recent places in other buffers and in this one,
        the search index's related chunks; each part on its own (a failure leaves it out)."""
        from agentls.engine.inline.cursor_context import imported_definitions, snippet_around
        from agentls.llm.fim_templates import ContextFile

        files: list[ContextFile] = []
        own_path = documents.path_of(uri)
        if language == "python" and own_path is not None:
            try:
                files += imported_definitions(text, lambda m: self._module_file(m, own_path),
                                              self._read_small, self._relative)
            except Exception:
                log.exception("inline completion: reading the imports' definitions failed")
        by_language = sorted(others, key=lambda o: (o[2] != language, -len(o[4])))
        for _other_uri, path, _lang, other_text, spots in by_language[:4]:
            where = spots[-1] if spots else 0
            files.append(ContextFile(self._relative(path), snippet_around(other_text, where)))
        for spot in self._recent.get(uri, ()):
            if abs(spot - line) > 2 * RELATED_BLOCK_LINES:
                files.append(ContextFile(self._relative(own_path) if own_path else uri,
                                         snippet_around(text, spot, 16)))
        files += self._index_snippets(engine, text, line)
        return files

    def _index_snippets(self, engine: Any, text: str, line: int) -> list[ContextFile]:
        root = self.server.root
        if engine is None or root is None or not (root / ".agentls" / "index.db").is_file():
            return []
        from agentls.engine.inline.cursor_context import snippet_around
        from agentls.llm.fim_templates import ContextFile

        query = snippet_around(text, line, 6)
        try:
            search = engine.agent.search_hub.get(self.server.new_workspace())
            result = search.search(query, 3)
        except Exception as exc:  # the completion goes on without them
            log.debug("inline completion: the search index gave nothing: %s", exc)
            return []
        return [ContextFile(f"{hit.path}:{hit.start_line}-{hit.end_line}", hit.snippet)
                for hit in result.hits]

    def _module_file(self, module: str, own: Path) -> Path | None:
        relative = Path(*module.lstrip(".").split(".")) if module.strip(".") else None
        if relative is None:
            return None
        bases = [own.parent, *self.server.roots, *(r / "src" for r in self.server.roots)]
        for base in bases:
            for candidate in (base / f"{relative}.py", base / relative / "__init__.py"):
                if candidate.is_file() and self._visible(candidate):
                    return candidate
        return None

    def _read_small(self, path: Path) -> str | None:
        document = documents.find(self.server, path)
        if document is not None:
            return document.source
        try:
            if path.stat().st_size > 256_000:
                return None
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None


def setup(server: ServerContext) -> None:
    feature = InlineCompletionFeature(server)
    server.settings_listeners.append(feature.on_settings)

    @server.feature(lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.InlineCompletionOptions())
    async def inline_completion(ls: ServerContext, params: lsp.InlineCompletionParams
                                ) -> lsp.InlineCompletionList:
        try:
            return await feature.answer(params)
        except asyncio.CancelledError:
            raise
        except Exception:  # a completion never breaks the editor: log it, answer nothing
            log.exception("inline completion failed")
            return EMPTY

    server.inline_completion = feature  # type: ignore[attr-defined]
