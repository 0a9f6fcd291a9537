"""Next-edit suggestions over LSP: ``textDocument/copilotInlineEdit`` (GitHub Copilot's
method, as copilot-lsp, sidekick.nvim and copilot.el send it) and ``agentls/nextEdit`` (the
same params and answer, for AgentLS's own clients); DESIGN.md decision 18.

Params ``{textDocument: {uri, version}, position}``; answer ``{edits: [{text, textDocument:
{uri, version}, range, command}]}`` (several edits would be alternatives; AgentLS sends at
most one). ``textDocument/didShowInlineEdit`` says it was shown, the edit's ``command``
(``agentls.nextEdit.accept``) that it was accepted, ``agentls.nextEdit.reject`` that it was
dismissed; a suggestion left unanswered when the next is asked for counts as accepted if the
document holds it, else ignored. ``didChange`` feeds each document's recent edits
(``engine/next_edit/recent_edits.py``) and closes the document's model request at once: its
answer could only be stale. A request for a version the document has left, for a file the
fence hides, or in a language switched off is answered with no edits, at once; the status
(``agentls/nextEditStatus``: idle, waiting, off, error) is sent when it changes. What the chat
prompt quotes beside the excerpt (definitions, the outline) is gathered in
``related_context.py``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from agentls.lsp.features.next_edit.related_context import RelatedContext
from agentls.lsp.services import documents, handlers
from agentls.lsp.services.as_you_type import AsYouType
from agentls.lsp.services.protocol import (
    CMD_NEXT_EDIT_ACCEPT,
    CMD_NEXT_EDIT_REJECT,
    COPILOT_INLINE_EDIT,
    DID_FOCUS,
    DID_SHOW_INLINE_EDIT,
    NEXT_EDIT,
    NEXT_EDIT_STATUS,
    ParamsError,
)
from agentls.lsp.services.protocol_params import inline_edit_id, parse_next_edit_params

if TYPE_CHECKING:
    from agentls.engine.next_edit.predictor import NextEditPredictor, Suggestion
    from agentls.engine.next_edit.recent_edits import EditHistory
    from agentls.lsp.services.server_context import ServerContext

log = logging.getLogger(__name__)

NO_EDITS: dict[str, Any] = {"edits": []}


class NextEditFeature:
    def __init__(self, server: ServerContext) -> None:
        self.server = server
        self.predictor: NextEditPredictor | None = None
        self.history: EditHistory | None = None
        self.typing = AsYouType(server, self._load,
                                lambda: server.settings.next_edit.active,
                                NEXT_EDIT_STATUS)
        self.related = RelatedContext(server, self.typing.index, self.typing.visible,
                                      self._model_path)

    # --- settings and status ------------------------------------------------------------------

    async def _load(self) -> NextEditPredictor:
        await self.server.ready()
        module = await self.server.imported("agentls.engine.next_edit.predictor")
        predictor: NextEditPredictor = module.NextEditPredictor(self.typing.tell)
        self.predictor = predictor
        self.on_settings()
        return predictor

    def on_settings(self) -> None:
        self.typing.follow_settings(self.predictor)

    # --- the documents as they are typed ------------------------------------------------------

    def on_document(self, params: Any) -> None:
        uri = params.text_document.uri
        if isinstance(params, lsp.DidCloseTextDocumentParams):
            self.typing.lines.pop(uri, None)
            self.related.forget(uri)
            if self.history is not None:
                self.history.closed(uri)
            if self.predictor is not None:
                self.predictor.forget(uri)
            return
        if not self._active():
            return  # off: nothing is kept
        predictor = self.predictor
        if predictor is not None and isinstance(params, lsp.DidChangeTextDocumentParams):
            predictor.cancel(uri)  # its answer would be for a version that is gone
        document = self.server.workspace.text_documents.get(uri)
        if document is None:
            return
        history = self._history()
        path = self._model_path(uri)
        if isinstance(params, lsp.DidOpenTextDocumentParams):
            history.opened(uri, path, document.source)
            return
        spans: list[tuple[int, int]] = []
        for change in params.content_changes:
            if not isinstance(change, lsp.TextDocumentContentChangePartial):
                spans = []
                break
            first = change.range.start.line
            spans.append((first, first + change.text.count("\n")))
        history.changed(uri, path, document.source, spans)

    def _active(self) -> bool:
        """On, or not known yet (the settings still loading: the edits are kept)."""
        if self.predictor is not None:
            return self.predictor.client is not None
        return self.server.resolved is None or self.server.settings.next_edit.active

    def _history(self) -> EditHistory:
        if self.history is None:
            from agentls.engine.next_edit.recent_edits import EditHistory

            self.history = EditHistory()
            for uri, document in list(self.server.workspace.text_documents.items()):
                self.history.opened(uri, self._model_path(uri), document.source)
        return self.history

    # --- the request --------------------------------------------------------------------------

    async def answer(self, raw: Any, method: str) -> dict[str, Any]:
        uri, version, line, character = parse_next_edit_params(raw, method)
        predictor = await self.typing.ready()
        if predictor.client is None:
            return NO_EDITS
        document = self.server.workspace.text_documents.get(uri)
        if document is None:
            return NO_EDITS  # not opened: the editor tells us about the documents it shows
        if version is not None and document.version != version:
            predictor.counters.stale += 1
            return NO_EDITS  # asked for a version the document has left
        if document.language_id in predictor.config.disabled_languages:
            return NO_EDITS
        path = documents.path_of(uri)
        if path is not None and not self.typing.visible(path):
            return NO_EDITS  # fenced: neither sent to the model nor edited
        text = document.source
        encoding = self.server.position_encoding
        if method == COPILOT_INLINE_EDIT and _copilot_client(self.server.initialization_options):
            encoding = "utf-16"  # what Copilot's clients send and apply, whatever was negotiated
        index = self.typing.index(uri)
        cursor = index.offset(text, line, character, encoding)
        from agentls.engine.next_edit.predictor import NextEditRequest

        history = self._history()
        if history.text(uri) is None:
            history.opened(uri, self._model_path(uri), text)
        request = NextEditRequest(
            uri=uri, path=self._model_path(uri), version=document.version, text=text,
            cursor=cursor, eol="\r\n" if text.find("\r\n", 0, 10_000) >= 0 else "\n",
            edits=history.recent(uri),
            related=self.related.quoted(uri, text, line, predictor.format))

        def current_version() -> int | None:
            now = self.server.workspace.text_documents.get(uri)
            return now.version if now is not None else None

        suggestion = await predictor.suggest(request, current_version)
        if suggestion is None:
            return NO_EDITS
        return {"edits": [self._edit(suggestion, text, line, cursor, encoding)]}

    def _edit(self, suggestion: Suggestion, text: str, line: int, cursor: int,
              encoding: str) -> dict[str, Any]:
        start = _position(text, suggestion.start, line, cursor, encoding)
        end = _position(text, suggestion.end, line, cursor, encoding)
        return {
            "text": suggestion.text,
            "textDocument": {"uri": suggestion.uri, "version": suggestion.version},
            "range": {"start": start, "end": end},
            "command": {"title": "Accept next edit", "command": CMD_NEXT_EDIT_ACCEPT,
                        "arguments": [suggestion.id]},
        }

    def _model_path(self, uri: str) -> str:
        path = documents.path_of(uri)
        if path is None:
            return uri
        for root in self.server.roots:
            try:
                return path.relative_to(root).as_posix()
            except ValueError:
                continue
        return path.name

    # --- what the person did ------------------------------------------------------------------

    def record(self, suggestion_id: str | None, outcome: str) -> None:
        if suggestion_id is None or self.predictor is None:
            return
        self.predictor.record(suggestion_id, outcome)  # type: ignore[arg-type]


def _position(text: str, offset: int, line: int, cursor: int, encoding: str) -> dict[str, int]:
    """The LSP position of ``offset``, counted from the cursor's line (never from the top of a
    long document)."""
    from agentls.base.text_positions import units_of

    if offset >= cursor:
        at_line = line + text.count("\n", cursor, offset)
    else:
        at_line = line - text.count("\n", offset, cursor)
    line_start = text.rfind("\n", 0, offset) + 1
    piece = text[line_start:offset]
    return {"line": at_line, "character": units_of(piece, encoding)}


def _copilot_client(options: Any) -> bool:
    """A client written for GitHub Copilot's language server: it sends the ``editorInfo`` /
    ``editorPluginInfo`` that server asks for. Such clients (copilot-lsp, for one) send and
    apply ``copilotInlineEdit`` positions in UTF-16 whatever encoding was negotiated."""
    return isinstance(options, dict) and ("editorInfo" in options
                                          or "editorPluginInfo" in options)


def _suggestion_id(arguments: list[Any], command: str) -> str:
    if len(arguments) != 1 or not isinstance(arguments[0], str):
        raise ParamsError(f"{command} takes one argument, the suggestion's id (the edit's "
                          "command arguments)")
    return arguments[0]


def setup(server: ServerContext) -> None:
    feature = NextEditFeature(server)
    server.settings_listeners.append(feature.on_settings)
    server.document_listeners.append(feature.on_document)

    for method in (COPILOT_INLINE_EDIT, NEXT_EDIT):

        @handlers.request(server, method)
        async def next_edit(ls: ServerContext, params: Any, method: str = method
                            ) -> dict[str, Any]:
            try:
                return await feature.answer(params, method)
            except (asyncio.CancelledError, ParamsError):
                raise
            except Exception:  # a suggestion never breaks the editor: log it, answer nothing
                log.exception("next edit failed")
                return NO_EDITS

    @server.feature(DID_SHOW_INLINE_EDIT)
    def did_show(ls: ServerContext, params: Any) -> None:
        feature.record(inline_edit_id(params), "shown")

    @server.feature(DID_FOCUS)
    def did_focus(ls: ServerContext, params: Any) -> None:
        return None  # copilot-lsp sends it on BufEnter; nothing to do, and nothing to log

    async def accept(ls: ServerContext, arguments: list[Any]) -> None:
        feature.record(_suggestion_id(arguments, CMD_NEXT_EDIT_ACCEPT), "accepted")

    async def reject(ls: ServerContext, arguments: list[Any]) -> None:
        feature.record(_suggestion_id(arguments, CMD_NEXT_EDIT_REJECT), "rejected")

    handlers.register_command(server, CMD_NEXT_EDIT_ACCEPT, accept)
    handlers.register_command(server, CMD_NEXT_EDIT_REJECT, reject)
    server.next_edit = feature  # type: ignore[attr-defined]
