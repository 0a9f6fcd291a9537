"""``POST /v1/responses`` of the scripted model server (the Responses API, which the Codex CLI
speaks: its providers accept only ``wire_api = "responses"``). Scripted, not a model.

The request's ``input`` items are read as the chat messages the script's ``match`` already
knows: ``message`` items by role (``developer`` and ``system`` as system), ``function_call``
/ ``custom_tool_call`` items as an assistant's tool calls, their ``*_output`` items as tool
results. The step's reply streams as the Responses API's server-sent events:
``response.created``; for the text ``response.output_item.added``, ``content_part.added``,
``response.output_text.delta`` pieces, ``output_text.done``, ``content_part.done`` and
``response.output_item.done`` (a ``message``); per tool call ``output_item.added``,
``function_call_arguments.delta`` / ``.done`` and ``output_item.done`` (a ``function_call``
with ``call_id``, ``name``, ``arguments``); then ``response.completed`` with the usage
(``input_tokens``, ``output_tokens``, ...); each event with its ``sequence_number``. Without
``stream`` the same items come as one response object.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from agentls.devtools.replay.completions import Select
from agentls.devtools.replay.requests import ChatView
from agentls.devtools.replay.script import Reply, Script
from agentls.devtools.replay.usage import (
    content_text,
    count_completion_tokens,
    count_prompt_tokens,
)
from agentls.devtools.replay.wire import (
    Answer,
    StreamAnswer,
    error_answer,
    json_bytes,
    scripted_error_answer,
)

_ROLES = {"developer": "system", "system": "system", "user": "user", "assistant": "assistant"}
_CALLS = ("function_call", "custom_tool_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def chat_messages(items: list[Any]) -> list[dict[str, Any]]:
    """The Responses ``input`` as chat-completions messages (what ``match`` reads)."""
    messages: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") in _ROLES:
            messages.append({"role": _ROLES[item["role"]],
                             "content": content_text(item.get("content"))})
        elif kind in _CALLS:
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"),
                                 "arguments": item.get("arguments", item.get("input", ""))}}
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind in _OUTPUTS:
            output = item.get("output")
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": output if isinstance(output, str)
                             else content_text(output)})
    return messages


def responses_answer(script: Script, body: Mapping[str, Any], select: Select,
                     next_number: Callable[[], int]
                     ) -> tuple[Answer | StreamAnswer, int | None]:
    """The answer to one ``/v1/responses`` request and the index of its step."""
    raw = body.get("input")
    if isinstance(raw, str):
        raw = [{"type": "message", "role": "user", "content": raw}]
    if not isinstance(raw, list) or not raw:
        return error_answer(400, "Missing required parameter: 'input'.", param="input",
                            code="missing_required_parameter"), None
    messages = chat_messages(raw)
    if isinstance(body.get("instructions"), str):
        messages.insert(0, {"role": "system", "content": body["instructions"]})
    view = ChatView.of({"model": body.get("model"), "stream": body.get("stream"),
                        "messages": messages})
    script, step = select(view)
    if step is None:
        shown = view.user if len(view.user) <= 200 else view.user[:200] + "…"
        return error_answer(500, "scripted model: no script step matches this request "
                            f"(last user message: {shown!r}; script {script.source})",
                            type_="server_error", code="no_matching_step"), None
    if step.error is not None:
        return scripted_error_answer(step.error), step.index
    assert step.reply is not None
    reply = step.reply
    number = next_number()
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    input_tokens = count_prompt_tokens(messages, tools)
    output_tokens = count_completion_tokens(
        reply.text, [(c.name, c.arguments) for c in reply.tool_calls])
    usage = {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": input_tokens + output_tokens}
    response_id = f"resp_scripted{number:08d}"
    items = _output_items(reply, number)
    response = {"id": response_id, "object": "response", "created_at": int(time.time()),
                "model": view.model, "status": "completed", "output": items, "usage": usage}
    if not view.stream:
        return Answer(200, json_bytes(response), delay_s=reply.first_delay_s), step.index
    events = [_event("response.created", response={**response, "status": "in_progress",
                                                    "output": [], "usage": None})]
    for index, item in enumerate(items):
        where = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            events.append(_event("response.output_item.added", output_index=index,
                                 item={**item, "status": "in_progress", "content": []}))
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append(_event("response.content_part.added", **where, content_index=0,
                                 part=part))
            text = reply.text
            for start in range(0, len(text), reply.chunk_size):
                events.append(_event("response.output_text.delta", **where, content_index=0,
                                     delta=text[start:start + reply.chunk_size]))
            events.append(_event("response.output_text.done", **where, content_index=0,
                                 text=text))
            events.append(_event("response.content_part.done", **where, content_index=0,
                                 part={**part, "text": text}))
        else:
            events.append(_event("response.output_item.added", output_index=index,
                                 item={**item, "status": "in_progress", "arguments": ""}))
            events.append(_event("response.function_call_arguments.delta", **where,
                                 delta=item["arguments"]))
            events.append(_event("response.function_call_arguments.done", **where,
                                 arguments=item["arguments"]))
        events.append(_event("response.output_item.done", output_index=index, item=item))
    events.append(_event("response.completed", response=response))
    events = [event.replace(b'"type":', b'"sequence_number":%d,"type":' % number, 1)
              for number, event in enumerate(events)]
    return (StreamAnswer(events, reply.first_delay_s, reply.delay_s, step.drop_after),
            step.index)


def _output_items(reply: Reply, number: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text or not reply.tool_calls:
        items.append({"type": "message", "id": f"msg_scripted{number:08d}", "role": "assistant",
                      "status": "completed", "content": [
                          {"type": "output_text", "text": reply.text, "annotations": []}]})
    for index, call in enumerate(reply.tool_calls):
        items.append({"type": "function_call", "id": f"fc_scripted{number:08d}_{index}",
                      "call_id": call.id or f"call_{number}_{index}", "name": call.name,
                      "arguments": call.arguments, "status": "completed"})
    return items


def _event(kind: str, **fields: Any) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + json_bytes({"type": kind, **fields}) + \
        b"\n\n"
