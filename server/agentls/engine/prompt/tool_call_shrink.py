"""Old tool calls made small for a request: the call, its path and its outcome stay; the bulk
(a written file's content, an edit's texts, a long result) goes, and the request says so.

A session whose turns wrote many large files carries those files' text in the calls'
arguments; resent whole, one such turn can outgrow the model's context. Trimming
(``history.py``) shrinks these first, before dropping messages and before compaction. The
session store keeps every message whole: only the request is shortened.
"""

from __future__ import annotations

import json
from typing import Any

from agentls.llm.messages import Message, ToolCall
from agentls.tools.output import truncate_middle

ARGUMENT_KEEP_CHARS = 200  # a string argument longer than this is shrunk to its head
ARGUMENT_HEAD_CHARS = 80
SHRUNK_NOTE = "characters omitted from this earlier call to keep the session within the " \
              "model's context; its result says what it did]"
RESULT_MIN_CHARS = 400  # the shortest a tool result is cut to: its outcome stays readable

_shrunk_calls: dict[Message, Message | None] = {}
_CACHE_LIMIT = 4_096


def shrink_arguments(arguments: str) -> str:
    """``arguments`` (JSON text) with each long string value cut to its head and a note
    saying how much was omitted; other values, keys and short strings (paths) unchanged."""
    if len(arguments) <= ARGUMENT_KEEP_CHARS:
        return arguments
    try:
        value = json.loads(arguments)
    except ValueError:
        return json.dumps({"omitted": f"[{len(arguments):,} characters of arguments that "
                           "were not valid JSON omitted]"})
    shrunk = _shrink_value(value)
    return arguments if shrunk == value else json.dumps(shrunk, ensure_ascii=False)


def _shrink_value(value: Any) -> Any:
    if isinstance(value, str):
        if len(value) <= ARGUMENT_KEEP_CHARS:
            return value
        omitted = len(value) - ARGUMENT_HEAD_CHARS
        return f"{value[:ARGUMENT_HEAD_CHARS]}[… {omitted:,} {SHRUNK_NOTE}"
    if isinstance(value, dict):
        return {key: _shrink_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shrink_value(item) for item in value]
    return value


def shrink_tool_calls(message: Message) -> Message:
    """An assistant message with its calls' arguments shrunk (the same object when nothing
    was long enough to shrink); memoised, so a history resent each iteration is shrunk once."""
    if not message.tool_calls:
        return message
    if message in _shrunk_calls:  # keyed by equality: an equal message shrinks the same way
        return _shrunk_calls[message] or message
    calls = tuple(ToolCall(call.id, call.name, shrink_arguments(call.arguments))
                  for call in message.tool_calls)
    shrunk: Message | None = None  # None: nothing to shrink
    if any(new.arguments != old.arguments for new, old in zip(calls, message.tool_calls,
                                                              strict=True)):
        shrunk = Message(message.role, message.content, calls, message.tool_call_id,
                         message.name)
    if len(_shrunk_calls) >= _CACHE_LIMIT:
        for stale in list(_shrunk_calls)[: _CACHE_LIMIT // 2]:
            del _shrunk_calls[stale]
    _shrunk_calls[message] = shrunk
    return shrunk or message


def cut_result(message: Message, limit: int) -> Message:
    """A tool result cut to its head and tail (the outcome is at the head of every result)."""
    content = message.content or ""
    if len(content) <= limit:
        return message
    return Message(message.role, truncate_middle(content, limit), message.tool_calls,
                   message.tool_call_id, message.name)
