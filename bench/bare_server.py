"""The baseline of the LSP benchmarks: a bare pygls server that keeps open documents (pygls's
own text sync) and answers ``textDocument/codeAction`` with an empty list. Nothing else.

Run: ``python -m bench.bare_server`` (stdio).
"""

from __future__ import annotations

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

server = LanguageServer("bare-pygls", "0")


@server.feature(
    lsp.TEXT_DOCUMENT_CODE_ACTION,
    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
)
def code_action(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    return []


if __name__ == "__main__":
    server.start_io()
