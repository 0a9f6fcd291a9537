"""The HTTP wire format of the scripted model server: OpenAI's error shape, scripted errors
and the ``delta`` objects of a streamed reply (see :mod:`agentls.devtools.replay.command`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentls.devtools.replay.script import Reply, ScriptedError


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


def _arguments(arguments: str, how: str) -> Any:
    """A call's ``arguments`` as the reply's ``arguments_as`` sends them."""
    if how == "object":  # a proxy or server that sends the object itself (issue 38)
        try:
            return json.loads(arguments or "{}")
        except ValueError:
            return arguments
    if how == "double":  # the JSON text encoded once more as a JSON string
        return json.dumps(arguments)
    return arguments


def stream_deltas(reply: Reply, call_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The ``delta`` objects of a streamed reply, in order, before the finishing delta.

    The shapes, as the servers' own code writes them:

    * ``call_shape: split`` (default): OpenAI's, also vLLM's and llama.cpp's with their tool
      parsers on: a call's first delta carries ``index``, ``id``, ``type``, ``function.name``
      and ``arguments: ""``, later deltas ``index`` and an ``arguments`` piece.
    * ``call_shape: whole``: Ollama's (``openai/openai.go``, ``ToChunk``: each
      ``api.ToolCall`` becomes one ``ToolCall{ID, Index, Type, Function{Name, Arguments}}``
      with the arguments marshalled whole, in the delta that carries the content), often
      with ``finish_reason: "stop"`` (Ollama before it reported ``tool_calls`` for streams).
    * ``reasoning_field``: ``reasoning_content`` (llama.cpp, vLLM, DeepSeek) or ``reasoning``
      (Ollama's ``Message.Reasoning`` is ``json:"reasoning"``; newer vLLM).
    * ``arguments_as: object`` / ``double``: ``arguments`` as a JSON object, or as a JSON
      string that encodes the JSON text again (proxies and servers that get this wrong).
    * ``omit_call_ids``: calls without ``id`` (Ollama's ``ToolCall.ID`` is empty for models
      whose template gives none); ``same_index``: every call under ``index: 0``.
    """
    deltas: list[dict[str, Any]] = []
    if reply.refusal:  # a refused request: the refusal text, no content, no calls
        deltas.append({"role": "assistant", "content": None, "refusal": ""})
        deltas.extend({"refusal": piece} for piece in _pieces(reply.refusal, reply.chunk_size))
        return deltas
    if reply.text or reply.reasoning or not reply.tool_calls:
        deltas.append({"role": "assistant", "content": "", "refusal": None})
        deltas.extend({reply.reasoning_field: piece}
                      for piece in _pieces(reply.reasoning, reply.chunk_size))
        deltas.extend({"content": piece} for piece in _pieces(reply.text, reply.chunk_size))
    per_call: list[list[dict[str, Any]]] = []
    whole = reply.call_shape == "whole" or reply.arguments_as != "string"
    for index, (call, call_id) in enumerate(zip(reply.tool_calls, call_ids, strict=True)):
        header: dict[str, Any] = {"index": 0 if reply.same_index else index, "id": call_id,
                                  "type": "function",
                                  "function": {"name": call.name, "arguments": ""}}
        if reply.omit_call_ids:
            del header["id"]
        if whole:
            header["function"]["arguments"] = _arguments(call.arguments, reply.arguments_as)
            per_call.append([header])
            continue
        pieces = [{"index": header["index"], "function": {"arguments": piece}}
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


def text_tool_calls(text: str, calls: Sequence[Any], form: str) -> str:
    """The reply's calls written into its text, as a model writes them when its server does
    not parse tool calls (and as those servers' parsers read them when switched on):

    * ``hermes``: ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` per call (Hermes 2
      Pro, Qwen 2.5/3 chat templates; vLLM ``tool_parsers/hermes_tool_parser.py``);
    * ``mistral``: ``[TOOL_CALLS][{"name": …, "arguments": {…}}, …]`` (vLLM
      ``tool_parsers/mistral_tool_parser.py``, pre-v11 tokenizers); ``mistral_v11``:
      ``[TOOL_CALLS]name{…}`` per call (v11 tokenizers);
    * ``json``: a bare ``{"name": …, "arguments": {…}}`` object (a list for several), the
      generic format llama.cpp's ``common/chat.cpp`` asks of models it has no template for;
    * ``fenced``: the same inside a fenced ``json`` code block.
    """
    objects = [{"name": c.name, "arguments": json.loads(c.arguments or "{}")} for c in calls]
    lead = text + ("\n\n" if text else "")
    if form == "hermes":
        return lead + "\n".join(f"<tool_call>\n{json.dumps(o)}\n</tool_call>" for o in objects)
    if form == "mistral":
        return lead + "[TOOL_CALLS]" + json.dumps(objects)
    if form == "mistral_v11":
        return lead + "".join(f"[TOOL_CALLS]{o['name']}{json.dumps(o['arguments'])}"
                              for o in objects)
    body = json.dumps(objects[0] if len(objects) == 1 else objects, indent=2)
    if form == "json":
        return body
    return lead + f"```json\n{body}\n```"
