"""The baseline of the LSP benchmarks: a bare pygls server that keeps open documents (pygls's
own text sync) and answers ``textDocument/codeAction``. Nothing else.

- ``python -m bench.bare_server`` answers with an empty list: the floor of a round trip.
- ``python -m bench.bare_server --same-answer`` answers with actions of the same shape and
  count as AgentLS's (with two or more problems in range one grouped fix carrying none, then
  a quick fix for each of the first five, carrying its diagnostic; three selection actions
  and Explain, each with a small JSON ``data``), built in the plainest way. Against it, a
  ratio measures what AgentLS adds in building its list, not the cost of sending and
  decoding the actions that any server offering them pays.
"""

from __future__ import annotations

import json
import sys

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

server = LanguageServer("bare-pygls", "0")
SAME_ANSWER = "--same-answer" in sys.argv[1:]
SELECTION_TITLES = ("Refactor selection", "Add docstrings", "Write tests")


def _overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (
        b.start.line, b.start.character) <= (a.end.line, a.end.character)


def same_answer(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    r = params.range
    data = json.dumps({"uri": params.text_document.uri, "range": {
        "start": {"line": r.start.line, "character": r.start.character},
        "end": {"line": r.end.line, "character": r.end.character}}})
    found = [d for d in params.context.diagnostics if _overlaps(d.range, r)]
    out = [lsp.CodeAction(title=f"Fix the {len(found)} problems", kind=lsp.CodeActionKind.QuickFix,
                          data=data)] if len(found) > 1 else []
    out += [lsp.CodeAction(title=f"Fix: {d.message}", kind=lsp.CodeActionKind.QuickFix,
                           diagnostics=[d], data=data) for d in found[:5]]
    if r.start != r.end:
        out += [lsp.CodeAction(title=t, kind=lsp.CodeActionKind.RefactorRewrite, data=data)
                for t in SELECTION_TITLES]
    # Explain shows text, so it travels as a command with its arguments, as AgentLS's does.
    out.append(lsp.CodeAction(title="Explain", kind=lsp.CodeActionKind.Empty,
                              command=lsp.Command("Explain", "explain",
                                                  arguments=[json.loads(data)])))
    return out


@server.feature(
    lsp.TEXT_DOCUMENT_CODE_ACTION,
    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
)
def code_action(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    return same_answer(params) if SAME_ANSWER else []


if __name__ == "__main__":
    server.start_io()
