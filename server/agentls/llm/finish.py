"""How an OpenAI-compatible answer ended: its ``finish_reason`` in our words, and OpenAI's
``refusal`` field (a model that declines says why there, not in ``content``)."""

from __future__ import annotations

from typing import Any

from agentls.llm.messages import FinishReason

FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


def refusal_of(message: Any) -> str:
    """The ``refusal`` text of a message or a streamed delta ("" when there is none)."""
    refusal = getattr(message, "refusal", None)
    return refusal if isinstance(refusal, str) else ""


def finish_of(raw: str | None, refused: bool) -> FinishReason:
    """A refusal wins; an unknown or missing reason reads as ``stop``."""
    return "refusal" if refused else FINISH_REASONS.get(raw or "stop", "stop")
