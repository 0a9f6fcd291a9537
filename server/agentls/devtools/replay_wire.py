"""The HTTP wire format of the scripted model server: OpenAI's error shape, scripted errors
and the ``delta`` objects of a streamed reply (documented in :mod:`agentls.devtools.replay`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentls.devtools.replay_script import Reply, ScriptedError


@dataclass
class Answer:
    """A complete HTTP response; ``cut_after_bytes`` cuts the body short (dropped reply)."""

    status: int
    body: bytes
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str = "application/json"
    delay_s: float = 0.0
    cut_after_bytes: int | None = None


@dataclass
class StreamAnswer:
    events: list[bytes]
    first_delay_s: float
    delay_s: float
    drop_after: int | None


def json_bytes(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def _error_body(message: str, type_: str, code: str | None = None, param: str | None = None
                ) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def error_answer(status: int, message: str, type_: str = "invalid_request_error",
                 code: str | None = None, param: str | None = None) -> Answer:
    return Answer(status, json_bytes(_error_body(message, type_, code, param)))


_DEFAULT_ERRORS: dict[int, tuple[str, str, str | None]] = {
    400: ("Bad request (scripted error).", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to sample from this model.", "invalid_request_error", None),
    404: ("The model does not exist or you do not have access to it.",
          "invalid_request_error", "model_not_found"),
    429: ("Rate limit reached for requests (scripted error).", "requests",
          "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!",
          "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}


def scripted_error_answer(error: ScriptedError) -> Answer:
    headers = list(error.headers)
    content_type = "application/json"
    if error.body is None:
        message, type_, code = _DEFAULT_ERRORS.get(
            error.status, (f"HTTP {error.status} (scripted error).", "server_error", None)
        )
        body = json_bytes(_error_body(message, type_, code))
    elif isinstance(error.body, str):
        body = error.body.encode()
        try:
            json.loads(error.body)
        except ValueError:
            content_type = "text/plain; charset=utf-8"
    else:
        body = json_bytes(error.body)
    given = [v for k, v in headers if k.lower() == "content-type"]
    headers = [(k, v) for k, v in headers if k.lower() != "content-type"]
    return Answer(error.status, body, headers, given[0] if given else content_type, error.delay_s)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def stream_deltas(reply: Reply, call_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The ``delta`` objects of a streamed reply, in order, before the finishing delta."""
    deltas: list[dict[str, Any]] = []
    if reply.refusal:  # a refused request: the refusal text, no content, no calls
        deltas.append({"role": "assistant", "content": None, "refusal": ""})
        deltas.extend({"refusal": piece} for piece in _pieces(reply.refusal, reply.chunk_size))
        return deltas
    if reply.text or reply.reasoning or not reply.tool_calls:
        deltas.append({"role": "assistant", "content": "", "refusal": None})
        deltas.extend({"reasoning_content": piece}
                      for piece in _pieces(reply.reasoning, reply.chunk_size))
        deltas.extend({"content": piece} for piece in _pieces(reply.text, reply.chunk_size))
    per_call: list[list[dict[str, Any]]] = []
    for index, (call, call_id) in enumerate(zip(reply.tool_calls, call_ids, strict=True)):
        header = {"index": index, "id": call_id, "type": "function",
                  "function": {"name": call.name, "arguments": ""}}
        pieces = [{"index": index, "function": {"arguments": piece}}
                  for piece in _pieces(call.arguments, reply.chunk_size)]
        per_call.append([header, *pieces])
    if reply.interleave_tool_calls:
        longest = max((len(c) for c in per_call), default=0)
        ordered = [c[i] for i in range(longest) for c in per_call if i < len(c)]
    else:
        ordered = [d for c in per_call for d in c]
    for tool_delta in ordered:
        if deltas:
            deltas.append({"tool_calls": [tool_delta]})
        else:  # a reply with only tool calls: the role rides on the first call
            deltas.append({"role": "assistant", "content": None, "refusal": None,
                           "tool_calls": [tool_delta]})
    return deltas
