"""Inline completion as you type: ``textDocument/inlineCompletion`` (LSP 3.18).

The LSP side of the fast path in ``engine/inline/completer.py`` (DESIGN.md decision 15): the
position in the client's encoding becomes an offset, the popup's selected item (``context.
selectedCompletionInfo``) is applied before asking, unopened, fenced and switched-off
documents get an empty answer at once. What the model is asked and how (the backend, the
FIM client, the caches) is the engine's completer; which other files it may read, and when
they are gathered, is the engine's ``RelatedFiles`` (``engine/inline/related_files.py``):
this module gives them the editor's roots, fence and open buffers. The status
(``agentls/completionStatus``: idle, waiting, off, error) is sent only when it changes.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from agentls.lsp.services import documents
from agentls.lsp.services.as_you_type import AsYouType
from agentls.lsp.services.protocol import COMPLETION_STATUS

if TYPE_CHECKING:
    from agentls.engine.inline.completer import InlineCompleter
    from agentls.engine.inline.related_files import OpenBuffer, RelatedFiles
    from agentls.lsp.services.server_context import ServerContext

log = logging.getLogger(__name__)

COMMENTS = {"python": "#", "shellscript": "#", "ruby": "#", "yaml": "#", "toml": "#",
            "perl": "#", "r": "#", "makefile": "#", "dockerfile": "#", "lua": "--",
            "sql": "--", "haskell": "--"}
EMPTY = lsp.InlineCompletionList(items=[])


class InlineCompletionFeature:
    def __init__(self, server: ServerContext) -> None:
        self.server = server
        self.completer: InlineCompleter | None = None
        self.typing = AsYouType(server, self._load,
                                lambda: server.settings.completion.active,
                                COMPLETION_STATUS)
        self._units: dict[str, str] = {}
        self._related: RelatedFiles | None = None

    # --- settings and status ---------------------------------------------------------------------

    async def _load(self) -> InlineCompleter:
        await self.server.ready()
        module = await self.server.imported("agentls.engine.inline.completer")
        related = await self.server.imported("agentls.engine.inline.related_files")
        self._related = related.RelatedFiles(
            roots=lambda: self.server.roots, visible=self.typing.visible,
            open_text=self._open_text, search=self._search, spawn=self.server.spawn)
        completer: InlineCompleter = module.InlineCompleter(self.typing.tell)
        self.completer = completer
        self.on_settings()
        return completer

    def on_settings(self) -> None:
        self.typing.follow_settings(self.completer)

    # --- the request -----------------------------------------------------------------------------

    async def answer(self, params: lsp.InlineCompletionParams) -> lsp.InlineCompletionList:
        completer = await self.typing.ready()
        if completer.client is None:
            return EMPTY
        uri = params.text_document.uri
        document = self.server.workspace.text_documents.get(uri)
        if document is None:
            return EMPTY  # not opened: the editor tells us about the documents it shows
        if document.language_id in completer.config.disabled_languages:
            return EMPTY
        path = documents.path_of(uri)
        if path is not None and not self.typing.visible(path):
            return EMPTY
        text = document.source
        encoding = self.server.position_encoding
        position = params.position
        offset = self.typing.index(uri).offset(text, position.line,
                                                         position.character, encoding)
        start = position
        selected = params.context.selected_completion_info
        prefix_text = ""
        if selected is not None:
            index = self.typing.index(uri)
            begin = index.offset(text, selected.range.start.line, selected.range.start.character,
                                 encoding)
            end = index.offset(text, selected.range.end.line, selected.range.end.character,
                               encoding)
            text = text[:begin] + selected.text + text[end:]
            offset, start, prefix_text = begin + len(selected.text), selected.range.start, (
                selected.text)
        assert self._related is not None  # made with the completer
        self._related.note_spot(uri, position.line)
        if len(self.typing.lines) > len(self.server.workspace.text_documents) + 8:
            self._prune()
        from agentls.engine.inline.completer import CompletionRequest

        root = self.server.root
        request = CompletionRequest(
            uri=uri, path=self._related.relative(path) if path else uri,
            repo=root.name if root else "",
            text=text, offset=offset,
            automatic=params.context.trigger_kind == lsp.InlineCompletionTriggerKind.Automatic,
            unit=self._unit(uri, text), eol="\r\n" if text.find("\r\n", 0, 10_000) >= 0 else "\n",
            comment=COMMENTS.get(document.language_id or "", "//"),
            files=self._related.files(
                uri, path, document.source, document.language_id or "", position.line,
                lambda: self._others(uri), len(self.server.workspace.text_documents)))
        completion = await completer.complete(request)
        if not completion:
            return EMPTY
        return lsp.InlineCompletionList(items=[lsp.InlineCompletionItem(
            insert_text=prefix_text + completion, range=lsp.Range(start=start, end=position))])

    def _unit(self, uri: str, text: str) -> str:
        from agentls.engine.inline.cursor_context import indent_unit

        unit = self._units.get(uri)
        if unit is None:
            unit = self._units[uri] = indent_unit(text)
        return unit

    def _prune(self) -> None:
        """Forget what belongs to documents the editor closed."""
        open_uris = self.server.workspace.text_documents.keys()
        for uri in [u for u in self.typing.lines if u not in open_uris]:
            for table in (self.typing.lines, self._units):
                table.pop(uri, None)
            if self._related is not None:
                self._related.forget(uri)
            if self.completer is not None:
                self.completer.forget(uri)

    # --- what the engine's RelatedFiles asks of the editor ---------------------------------------

    def _others(self, uri: str) -> list[OpenBuffer]:
        """The other open documents, fenced (on the event loop: pygls's documents)."""
        from agentls.engine.inline.related_files import MAX_OTHER_BUFFER, OpenBuffer

        out = []
        for other_uri, doc in list(self.server.workspace.text_documents.items()):
            path = documents.path_of(other_uri)
            if other_uri == uri or path is None or not self.typing.visible(path):
                continue
            if len(doc.source) <= MAX_OTHER_BUFFER:
                out.append(OpenBuffer(other_uri, path, doc.language_id or "", doc.source))
        return out

    def _open_text(self, path: Path) -> str | None:
        document = documents.find(self.server, path)
        return document.source if document is not None else None

    def _search(self) -> Any | None:
        """The search index of the first root, when the engine is built and one exists."""
        engine = self.server.engine_if_built()
        root = self.server.root
        if engine is None or root is None or not (root / ".agentls" / "index.db").is_file():
            return None
        return engine.agent.search_hub.get(self.server.new_workspace())


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
