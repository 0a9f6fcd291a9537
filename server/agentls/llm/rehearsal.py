"""A rehearsal of a backend's first request, so that a person's first chat does not pay for
what a process does only once.

The first request of a process costs ~20 ms more than the next ones, none of it the model's:
the openai client imports its chat resource, anyio loads its event-loop backend, the SDK
reads its parameter types and pydantic builds the validators of the stream's models. An editor
starts the server well before anyone chats, so the server rehearses in its start-up work
(lsp/server.py, through ``Agent.prepare``), in a thread.

The rehearsal is a streamed request through the same code as a real one, made by a stand-in
of the backend (same configuration, but the address ``URL``) whose HTTP client answers from
memory with a canned stream: text, a tool call, usage. Nothing is sent anywhere, and the
backend's own client and connection pool are left untouched. The server skips it once a chat
has started: that chat's own request does the same first-time work.
"""

from __future__ import annotations

import json

import anyio
import httpx2

from agentls.llm.messages import ChatRequest, ChatResponse, Message, ToolSpec
from agentls.llm.openai_compat import OpenAICompatBackend
from agentls.llm.retry import RetryPolicy

TOOL = "rehearsal"
TEXT = "ok"
URL = "http://agentls-rehearsal.invalid/v1"  # answered from memory: .invalid never resolves


def rehearse(backend: OpenAICompatBackend) -> None:
    """Rehearse ``backend``'s first request. Blocks (~20 ms the first time): call it in a
    thread, never on an event loop. Raises if the canned answer is not read back as sent."""
    # Its own address, so that a log line of the rehearsal (httpx logs every request) is
    # never taken for a request to the model server.
    config = backend.config.model_copy(update={"base_url": URL})
    stand_in = OpenAICompatBackend(
        backend.name, config, api_key=None, retry=RetryPolicy(max_retries=0),
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(_answer),
                                       trust_env=False))
    request = ChatRequest(messages=[Message("user", "rehearsal")],
                          tools=[ToolSpec(TOOL, "A stand-in tool.",
                                          {"type": "object", "properties": {}})])

    async def stream() -> ChatResponse | None:
        response = None
        try:
            async for chunk in stand_in.stream(request, use_cache=False):
                response = chunk.response if chunk.kind == "done" else response
        finally:
            await stand_in.aclose()
        return response

    # anyio's runner rather than asyncio's: the HTTP stack's async parts run on anyio, which
    # loads its asyncio backend on first use; this loads it here.
    response = anyio.run(stream)
    calls = [call.name for call in response.tool_calls] if response else []
    if response is None or response.text != TEXT or calls != [TOOL]:
        raise RuntimeError(f"the rehearsed request was read as {response!r}")


def _answer(request: httpx2.Request) -> httpx2.Response:
    """The stand-in's answer to every request: a stream like a real server's."""
    base = {"id": "rehearsal", "object": "chat.completion.chunk", "created": 0,
            "model": "rehearsal"}
    call = {"index": 0, "id": "call_0", "type": "function",
            "function": {"name": TOOL, "arguments": "{}"}}
    events = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": TEXT},
                              "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {"tool_calls": [call]},
                              "finish_reason": "tool_calls"}]},
        {**base, "choices": [],
         "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}},
    ]
    body = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
    return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                           content=body.encode())
