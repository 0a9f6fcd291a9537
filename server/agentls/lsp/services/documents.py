"""Open documents: incremental text sync, and the unsaved buffers the agent reads.

pygls applies ``didOpen`` / ``didChange`` / ``didClose`` to ``ls.workspace`` itself (text and
version per URI, positions in the negotiated encoding); registering the notifications here
makes the server advertise ``openClose`` with incremental sync. A run's Workspace is fed
these buffers, so the model reads what the person sees, saved or not, and edits carry the
version they were made against.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

if TYPE_CHECKING:
    from agentls.lsp.services.server_context import ServerContext
    from agentls.workspace.fence import Workspace


log = logging.getLogger(__name__)


def path_of(uri: str) -> Path | None:
    """The file a ``file:`` URI names; None for other schemes (untitled:, git: ...)."""
    if not uri.startswith("file:"):
        return None
    fs_path = to_fs_path(uri)
    return Path(fs_path) if fs_path else None


def open_documents(ls: ServerContext) -> Iterator[tuple[Path, TextDocument]]:
    """Every open ``file:`` document with its path."""
    for uri, document in list(ls.workspace.text_documents.items()):
        path = path_of(uri)
        if path is not None:
            yield path, document


def find(ls: ServerContext, path: Path) -> TextDocument | None:
    """The open document for ``path`` (matched on the real path, so URI spellings agree)."""
    document = ls.workspace.text_documents.get(path.as_uri())
    if document is not None:
        return document
    wanted = os.path.realpath(path)
    for open_path, doc in open_documents(ls):
        if os.path.realpath(open_path) == wanted:
            return doc
    return None


def feed(ls: ServerContext, workspace: Workspace) -> None:
    """Give a run's Workspace the editor's buffers (text and version)."""
    for path, document in open_documents(ls):
        if document.version is not None:
            workspace.open_document(path, document.source, document.version)


DocumentParams = (lsp.DidOpenTextDocumentParams | lsp.DidChangeTextDocumentParams
                  | lsp.DidCloseTextDocumentParams)


def _tell(ls: ServerContext, params: DocumentParams) -> None:
    for listener in list(ls.document_listeners):
        try:
            listener(params)
        except Exception:  # one feature's failure must not stop the others, nor the sync
            log.exception("a document listener failed")


def setup(server: ServerContext) -> None:
    # pygls has already applied each notification to ls.workspace when these run.
    # Features that follow the text as it is typed (next-edit suggestions) are told after.
    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ServerContext, params: lsp.DidOpenTextDocumentParams) -> None:
        _tell(ls, params)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: ServerContext, params: lsp.DidChangeTextDocumentParams) -> None:
        _tell(ls, params)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: ServerContext, params: lsp.DidCloseTextDocumentParams) -> None:
        _tell(ls, params)

    # Files changed on disk: features listening are told (the search index) and the project
    # facts (tree, git state) are gathered again.
    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: ServerContext, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.files_changed([params.text_document.uri])

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: ServerContext,
                                 params: lsp.DidChangeWatchedFilesParams) -> None:
        ls.files_changed([change.uri for change in params.changes])
