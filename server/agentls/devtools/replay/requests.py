"""What the scripted model server records of a request, and what a step's ``match`` sees."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentls.devtools.replay.script import StepMatch
from agentls.devtools.replay.usage import content_text


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it (secret headers redacted, names lower-case)."""

    method: str
    path: str
    body: Any  # parsed JSON; the raw text when it was not JSON; None when empty
    headers: dict[str, str]
    time: float
    status: int  # the status answered (200 for a dropped stream)
    step: int | None  # index of the script step that answered, if one did
    connection: int  # sequence number of the TCP connection (keep-alive shows as reuse)

    @property
    def last_user_message(self) -> str:
        messages = self.body.get("messages") if isinstance(self.body, dict) else None
        return last_user_text(messages if isinstance(messages, list) else [])


@dataclass(frozen=True)
class RemainingStep:
    index: int
    name: str | None
    uses_left: int


def last_user_text(messages: Sequence[Any]) -> str:
    """Text of the last message with role ``user`` ("" when there is none)."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


@dataclass(frozen=True)
class ChatView:
    """What a step's ``match`` looks at."""

    model: str
    stream: bool
    user: str
    system: str
    ends_with_tool_results: bool
    trailing_tools: frozenset[str]
    has_tools: bool = False

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> ChatView:
        messages = [m for m in body["messages"] if isinstance(m, dict)]
        names_by_id = {
            call.get("id"): (call.get("function") or {}).get("name")
            for m in messages
            if isinstance(m.get("tool_calls"), list)
            for call in m["tool_calls"]
            if isinstance(call, dict)
        }
        trailing: set[str] = set()
        for message in reversed(messages):
            if message.get("role") != "tool":
                break
            name = names_by_id.get(message.get("tool_call_id")) or message.get("name")
            if isinstance(name, str):
                trailing.add(name)
        return cls(
            model=str(body.get("model")),
            stream=bool(body.get("stream")),
            user=last_user_text(messages),
            system="\n".join(
                content_text(m.get("content")) for m in messages if m.get("role") == "system"
            ),
            ends_with_tool_results=bool(messages) and messages[-1].get("role") == "tool",
            trailing_tools=frozenset(trailing),
            has_tools=bool(body.get("tools")),
        )

    def fits(self, match: StepMatch) -> bool:
        return (
            not match.completions_only
            and (match.user is None or match.user.matches(self.user))
            and (match.system is None or match.system.matches(self.system))
            and (match.tool_results is None or match.tool_results == self.ends_with_tool_results)
            and (match.tool is None or match.tool in self.trailing_tools)
            and (match.model is None or match.model == self.model)
            and (match.stream is None or match.stream == self.stream)
            and (match.tools is None or match.tools == self.has_tools)
        )


@dataclass(frozen=True)
class CompletionView:
    """What a step's ``match`` looks at in a ``/v1/completions`` request."""

    model: str
    stream: bool
    prompt: str
    suffix: str

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> CompletionView:
        prompt = body.get("prompt")
        if isinstance(prompt, list):
            prompt = "".join(p for p in prompt if isinstance(p, str))
        suffix = body.get("suffix")
        return cls(model=str(body.get("model")), stream=bool(body.get("stream")),
                   prompt=prompt if isinstance(prompt, str) else "",
                   suffix=suffix if isinstance(suffix, str) else "")

    def fits(self, match: StepMatch) -> bool:
        return (
            not match.chat_only
            and (match.prompt is None or match.prompt.matches(self.prompt))
            and (match.suffix is None or match.suffix.matches(self.suffix))
            and (match.model is None or match.model == self.model)
            and (match.stream is None or match.stream == self.stream)
        )


@dataclass(frozen=True)
class StreamEnd:
    """How a streamed answer ended: sent whole, or closed by the client before its end."""

    path: str
    time: float  # time.time() when the last event left, or when the server saw the close
    events_sent: int
    events_total: int
    closed: bool  # the client closed the connection first
