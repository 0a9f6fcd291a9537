"""The complete answer built from a chat-completions stream's deltas, tool-call fragments
included, whatever shape the server streams them in (issue 38; the scripted server serves
each shape: devtools/replay/wire.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentls.llm.finish import finish_of, refusal_of
from agentls.llm.messages import ChatResponse, ToolCall, Usage


@dataclass
class _ToolCallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def whole(self) -> bool:
        """The arguments so far already make a JSON value (a complete call)."""
        try:
            json.loads("".join(self.arguments) or "x")
        except ValueError:
            return False
        return True


def arguments_text(raw: object) -> str:
    """A call's ``arguments`` as the JSON text of an object, whatever the server sent: a
    string as it is, an object (some servers and proxies send one) encoded, a string that
    encodes a JSON string of an object (double-encoded) decoded once. Anything else is kept
    as text, so the model sees the tool error about it rather than the run a traceback."""
    if raw is None:
        return ""
    if isinstance(raw, dict | list):
        return json.dumps(raw, ensure_ascii=False)
    if not isinstance(raw, str):
        return json.dumps(raw, ensure_ascii=False, default=str)
    stripped = raw.strip()
    if stripped.startswith('"'):
        try:
            inner = json.loads(stripped)
        except ValueError:
            return raw
        if isinstance(inner, str) and inner.strip().startswith("{"):
            try:
                if isinstance(json.loads(inner), dict):
                    return inner
            except ValueError:
                pass
    return raw


class StreamAssembler:
    """Builds the complete response from streamed deltas, tool-call fragments included.

    Servers differ in how they stream calls (the scripted server serves each shape:
    ``devtools/replay/wire.py``): OpenAI splits a call's arguments over many deltas under one
    ``index``; Ollama sends each call whole in one delta; some omit ``id`` or ``index``, send
    ``arguments`` as an object, or reuse one ``index`` for several whole calls. A delta for an
    index whose call is already whole and that brings a new ``id`` or a new name starts the
    next call."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: list[_ToolCallParts] = []
        self._slots: dict[int, int] = {}  # a delta's index -> its call in ``calls``
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.model = ""
        self.reasoning = ""  # the last chunk's reasoning delta (shown, never sent back)
        self.refused = False  # the model said why it will not answer (``delta.refusal``)

    def feed(self, chunk: Any) -> str:
        """Take one ``ChatCompletionChunk``; return its text delta (may be empty)."""
        if getattr(chunk, "usage", None) is not None:
            self.usage = usage_of(chunk.usage)
        if getattr(chunk, "model", None):
            self.model = chunk.model
        delta_text = ""
        self.reasoning = ""
        for choice in getattr(chunk, "choices", None) or ():
            delta = choice.delta
            if delta is not None:
                # llama.cpp, vLLM, DeepSeek: reasoning_content; Ollama, newer vLLM: reasoning
                thought = getattr(delta, "reasoning_content", None)
                if not isinstance(thought, str):
                    thought = getattr(delta, "reasoning", None)
                if isinstance(thought, str):
                    self.reasoning += thought
                if isinstance(delta.content, str) and delta.content:
                    delta_text += delta.content
                if refusal := refusal_of(delta):  # shown and kept as the answer
                    self.refused, delta_text = True, delta_text + refusal
                for part in delta.tool_calls or ():
                    self._feed_call(part)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        if delta_text:
            self.text.append(delta_text)
        return delta_text

    def _feed_call(self, part: Any) -> None:
        function = getattr(part, "function", None)
        if isinstance(function, dict):  # an SDK that kept an unexpected shape as a dict
            name, arguments = function.get("name"), function.get("arguments")
        else:
            name = getattr(function, "name", None)
            arguments = getattr(function, "arguments", None)
        call_id = getattr(part, "id", None) or ""
        index = getattr(part, "index", None)
        if not isinstance(index, int):  # no index: a named delta starts a call
            index = -1 - len(self.calls) if name or not self.calls else None
            if index is None:
                self.calls[-1].arguments.append(arguments_text(arguments))
                return
        position = self._slots.get(index)
        slot = self.calls[position] if position is not None else None
        if slot is not None and slot.name and slot.whole() and (
                (call_id and slot.id and call_id != slot.id) or (name and not call_id)
                or (name and call_id and not slot.id)):
            slot = None  # the index is reused for the next whole call
        if slot is None:
            slot = _ToolCallParts()
            self._slots[index] = len(self.calls)
            self.calls.append(slot)
        if call_id:
            slot.id = call_id
        if isinstance(name, str) and name:
            slot.name += name
        text = arguments_text(arguments)
        if text:
            slot.arguments.append(text)

    def tool_calls(self) -> list[ToolCall]:
        calls, seen = [], set()
        for position, parts in enumerate(self.calls):
            call_id = parts.id or f"call_{position}"
            if call_id in seen:  # two calls under one id: the model needs them apart
                call_id = f"{call_id}_{position}"
            seen.add(call_id)
            calls.append(ToolCall(call_id, parts.name, arguments_text("".join(parts.arguments))))
        return calls

    def response(self) -> ChatResponse:
        return ChatResponse(
            text="".join(self.text),
            tool_calls=self.tool_calls(),
            finish_reason=finish_of(self.finish_reason, self.refused),
            usage=self.usage,
            model=self.model,
        )


def usage_of(raw: Any) -> Usage:
    prompt = int(getattr(raw, "prompt_tokens", 0) or 0)
    completion = int(getattr(raw, "completion_tokens", 0) or 0)
    total = int(getattr(raw, "total_tokens", 0) or 0) or prompt + completion
    return Usage(prompt, completion, total)
