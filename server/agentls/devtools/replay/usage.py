"""Token counts and embedding vectors of the scripted model server.

The rules are documented in :mod:`agentls.devtools.replay.command` ("Usage (token counts)" and
``POST /v1/embeddings``); these functions implement exactly them.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_EMBEDDING_DIMENSIONS = 384
_TOKEN = re.compile(r"\w+|[^\w\s]")
TOKEN = _TOKEN  # the token rule (the text under "Usage")
_WORD = re.compile(r"\w+")


def count_tokens(text: str) -> int:
    """Tokens of ``text`` by the documented rule: matches of ``\\w+|[^\\w\\s]``."""
    return sum(1 for _ in _TOKEN.finditer(text))


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _tool_call_parts(message: Mapping[str, Any]) -> list[tuple[str, str]]:
    calls = message.get("tool_calls")
    parts: list[tuple[str, str]] = []
    if not isinstance(calls, list):
        return parts
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            parts.append((str(function.get("name") or ""), str(function.get("arguments") or "")))
    return parts


def count_prompt_tokens(messages: Sequence[Any], tools: Any = None) -> int:
    """``prompt_tokens`` of a chat request by the rule in :mod:`agentls.devtools.replay.command`."""
    total = 0
    for message in messages:
        if not isinstance(message, dict):
            continue
        total += 4 + count_tokens(content_text(message.get("content")))
        total += sum(count_tokens(n) + count_tokens(a) for n, a in _tool_call_parts(message))
    if tools:
        total += count_tokens(json.dumps(tools))
    return total


def count_completion_tokens(text: str, tool_calls: Sequence[tuple[str, str]] = ()) -> int:
    """``completion_tokens`` of a reply: its text plus each call's (name, arguments)."""
    return count_tokens(text) + sum(count_tokens(n) + count_tokens(a) for n, a in tool_calls)


def embed_text(text: str, dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS) -> list[float]:
    """A deterministic, L2-normalised bag-of-words vector (feature hashing with signs)."""
    vector = [0.0] * dimensions
    for token in _WORD.findall(text.lower()) or [text]:
        bucket = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "big")
        vector[bucket % dimensions] += -1.0 if bucket >> 63 else 1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:  # colliding tokens with opposite signs cancelled out
        vector[0], norm = 1.0, 1.0
    return [v / norm for v in vector]
