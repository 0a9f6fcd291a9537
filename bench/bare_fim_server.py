"""The baseline of the inline completion benchmark: a bare pygls server that answers
``textDocument/inlineCompletion`` by forwarding the same fill-in-the-middle request to the
model (the text before the cursor as ``prompt``, after it as ``suffix``, in windows of
the same size as AgentLS's, whole lines, streamed through the ``openai`` client) and
returning the text. No caches, no cleaning, no cancellation: the plainest server that does
the job, sending the same request.

``python -m bench.bare_fim_server BASE_URL MODEL PREFIX_CHARS SUFFIX_CHARS [MAX_TOKENS]``
"""

from __future__ import annotations

import sys

import openai
from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

server = LanguageServer("bare-fim", "0")
BASE_URL, MODEL = sys.argv[1], sys.argv[2]
PREFIX_CHARS, SUFFIX_CHARS = int(sys.argv[3]), int(sys.argv[4])
MAX_TOKENS = int(sys.argv[5]) if len(sys.argv) > 5 else 128
client = openai.AsyncOpenAI(base_url=BASE_URL, api_key="none", max_retries=0)


@server.feature(lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.InlineCompletionOptions())
async def inline_completion(params: lsp.InlineCompletionParams) -> lsp.InlineCompletionList:
    document = server.workspace.get_text_document(params.text_document.uri)
    offset = document.offset_at_position(params.position)
    text = document.source
    start = max(0, offset - PREFIX_CHARS)
    if start:
        start = text.find("\n", start, offset) + 1 or start
    end = min(len(text), offset + SUFFIX_CHARS)
    if end < len(text):
        end = text.rfind("\n", offset, end) + 1 or end
    stream = await client.completions.create(model=MODEL, prompt=text[start:offset],
                                             suffix=text[offset:end], max_tokens=MAX_TOKENS,
                                             temperature=0.1, stream=True)
    pieces = [choice.text async for chunk in stream for choice in chunk.choices]
    return lsp.InlineCompletionList(items=[lsp.InlineCompletionItem(
        insert_text="".join(pieces), range=lsp.Range(params.position, params.position))])


if __name__ == "__main__":
    server.start_io()
