"""Shapes of tool results the model reads, and how long output is cut."""

from __future__ import annotations

import json
from typing import Any

DEFAULT_RESULT_LIMIT = 8_000
# shell_exec's stdout and stderr, each (here so a run's ToolContext need not import shell.py)
DEFAULT_SHELL_OUTPUT_LIMIT = 5_000


def truncate_middle(text: str, limit: int) -> str:
    """Keep the head and tail of ``text`` so that at most ``limit`` characters remain.

    The marker says how much was cut, so the model knows to ask for a narrower range.
    """
    if limit <= 0 or len(text) <= limit:
        return text
    omitted = len(text) - limit
    marker = f"\n[... {omitted} characters omitted ...]\n"
    head = limit // 2
    tail = limit - head
    return text[:head] + marker + text[len(text) - tail :]


def ok(**data: Any) -> dict[str, Any]:
    """A successful tool result."""
    return {"ok": True, **data}


def fail(error: str, message: str, **data: Any) -> dict[str, Any]:
    """A failed tool result: ``error`` is a stable code, ``message`` is written for the model."""
    return {"ok": False, "error": error, "message": message, **data}


def to_json(result: dict[str, Any], limit: int = DEFAULT_RESULT_LIMIT) -> str:
    """Serialise a result for the model, at most ``limit`` characters long.

    The longest text fields are cut first so the result stays valid JSON; only when that is
    not enough (a huge list, say) is the serialised text itself cut in the middle.
    """
    text = json.dumps(result, ensure_ascii=False)
    if limit <= 0 or len(text) <= limit:
        return text
    shrunk = dict(result)
    for key in sorted(
        (k for k, v in shrunk.items() if isinstance(v, str)),
        key=lambda k: len(shrunk[k]),
        reverse=True,
    ):
        excess = len(text) - limit
        value: str = shrunk[key]
        # json.dumps may escape characters, so measure again after every cut.
        shrunk[key] = truncate_middle(value, max(0, len(value) - excess - 64))
        text = json.dumps(shrunk, ensure_ascii=False)
        if len(text) <= limit:
            return text
    return truncate_middle(text, limit)
