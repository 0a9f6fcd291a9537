"""The backend-neutral types the engine speaks: messages, tool calls, requests and stream chunks.

They map one-to-one onto the OpenAI chat-completions wire format (``to_openai``), which every
supported backend speaks (DESIGN.md decision 5).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from agentls.policy.redaction import redact

Role = Literal["system", "user", "assistant", "tool"]
# "refusal": the model answered with OpenAI's ``refusal`` field (its text is the answer).
FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "refusal", "error"]


def canonical_json(value: Any) -> str:
    """The one JSON spelling of a value: sorted keys, no spaces, text kept as it is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class _WireForm:
    """The wire JSON of a frozen message-like object and its digest, each computed once."""

    __slots__ = ()
    _wire: list[str]

    def to_openai(self) -> dict[str, Any]:
        raise NotImplementedError

    def wire_json(self) -> str:
        """``canonical_json(self.to_openai())``, computed once."""
        if not self._wire:
            self._wire.append(canonical_json(self.to_openai()))
        return self._wire[0]

    def wire_digest(self) -> bytes:
        """SHA-256 of ``wire_json()``, computed once (cache keys hash these, not the text)."""
        if len(self._wire) < 2:
            self._wire.append(hashlib.sha256(self.wire_json().encode("utf-8")).hexdigest())
        return self._wire[1].encode("ascii")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for. ``arguments`` is the raw JSON text the model produced."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; raises ``MalformedToolCall`` when the model's JSON is bad."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError as exc:
            raise MalformedToolCall(self, f"arguments are not valid JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise MalformedToolCall(self, "arguments must be a JSON object")
        return value

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


class MalformedToolCall(ValueError):
    """The model produced a tool call whose arguments cannot be used as they are."""

    def __init__(self, call: ToolCall, reason: str) -> None:
        super().__init__(f"tool call {call.name!r} ({call.id}): {reason}")
        self.call = call
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Image:
    """An image of a user message (for a model that takes images): its MIME type and its
    bytes in base64, sent as an ``image_url`` data URL part."""

    mime_type: str
    data: str

    def to_openai(self) -> dict[str, Any]:
        return {"type": "image_url",
                "image_url": {"url": f"data:{self.mime_type};base64,{self.data}"}}


@dataclass(frozen=True, slots=True)
class Message(_WireForm):
    """One message of a conversation. Frozen: a history is resent on every iteration, so each
    message's wire JSON is computed once (``wire_json``) and must never go stale."""

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None  # the tool's name on tool results, for readers of the history
    # A user message's images: sent this turn, not stored (the store keeps a note of them).
    images: tuple[Image, ...] = ()
    _wire: list[str] = field(default_factory=list, init=False, repr=False, compare=False)

    def to_openai(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role}
        if self.role == "assistant" and self.tool_calls:
            out["content"] = self.content or None
            out["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        elif self.images:
            out["content"] = [{"type": "text", "text": self.content or ""},
                              *(image.to_openai() for image in self.images)]
        else:
            out["content"] = self.content or ""
        if self.role == "tool":
            out["tool_call_id"] = self.tool_call_id
        return out

    @classmethod
    def system(cls, content: str) -> Message:
        return cls("system", content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls("user", content)

    @classmethod
    def assistant(
        cls, content: str | None, tool_calls: Sequence[ToolCall] | None = None
    ) -> Message:
        return cls("assistant", content, tuple(tool_calls or ()))

    @classmethod
    def tool(cls, tool_call_id: str, content: str, name: str | None = None) -> Message:
        return cls("tool", content, tool_call_id=tool_call_id, name=name)


@dataclass(frozen=True, slots=True)
class ToolSpec(_WireForm):
    """A tool offered to the model: its name, what it does, and a JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
    _wire: list[str] = field(default_factory=list, init=False, repr=False, compare=False)

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
        )


@dataclass(slots=True)
class ChatRequest:
    """One request to a model. ``model``/``max_tokens``/``temperature`` default to the backend's."""

    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None


@dataclass(slots=True)
class ChatResponse:
    """A complete answer: text, tool calls, why the model stopped, and what it cost."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: FinishReason = "stop"
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    cached: bool = False
    # The server did not parse the model's tool calls: they were read from its text, written
    # in this form (llm/text_tool_calls.py: "hermes", "mistral", "json", "fenced").
    calls_from_text: str = ""
    # The tools were described in the prompt, not sent as ``tools`` (tool_calls = "text", or
    # "auto" after the server refused tools).
    tools_as_text: bool = False

    def redacted(self) -> ChatResponse:
        """This answer with every secret the model echoed replaced by the marker."""
        return replace(self, text=redact(self.text), tool_calls=[
            replace(c, arguments=redact(c.arguments)) for c in self.tool_calls])

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tool_calls": [[c.id, c.name, c.arguments] for c in self.tool_calls],
            "finish_reason": self.finish_reason,
            "usage": [
                self.usage.prompt_tokens,
                self.usage.completion_tokens,
                self.usage.total_tokens,
            ],
            "model": self.model,
            "calls_from_text": self.calls_from_text,
            "tools_as_text": self.tools_as_text,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, cached: bool = False) -> ChatResponse:
        return cls(
            text=data["text"],
            tool_calls=[ToolCall(i, n, a) for i, n, a in data["tool_calls"]],
            finish_reason=data["finish_reason"],
            usage=Usage(*data["usage"]),
            model=data["model"],
            cached=cached,
            calls_from_text=data.get("calls_from_text", ""),
            tools_as_text=bool(data.get("tools_as_text", False)),
        )


ChunkKind = Literal["text", "reasoning", "tool_call", "done"]


@dataclass(frozen=True, slots=True)
class ChatChunk:
    """One piece of a streamed answer.

    ``text`` chunks carry a delta; ``reasoning`` chunks the model's thinking where the server
    streams it (``reasoning_content``: DeepSeek, vLLM, llama.cpp), never part of the answer;
    a ``tool_call`` chunk carries one complete call (argument
    deltas are assembled before it is emitted); the last chunk is ``done`` with the response.
    ``cached`` is true when the answer is replayed from the response cache.
    """

    kind: ChunkKind
    text: str = ""
    tool_call: ToolCall | None = None
    response: ChatResponse | None = None
    cached: bool = False
