"""The scripted model's next-edit answers: a step whose reply has ``rewrite: [[old, new],
...]`` answers with the excerpt of the request it got (Zeta's format, or the chat prompt's
same markers), its editable region rewritten with those replacements and the cursor marker
left out, as a next-edit model writes it. Scripted: no model runs; the rewrite is plain
string replacement.
"""

from __future__ import annotations

from collections.abc import Sequence

REGION_START = "<|editable_region_start|>"
REGION_END = "<|editable_region_end|>"
CURSOR = "<|user_cursor_is_here|>"


def rewritten_excerpt(prompt: str, pairs: Sequence[tuple[str, str]]) -> str:
    """The answer to ``prompt``: its excerpt (from the line that opens it with ``` to the one
    that closes it) with the region rewritten; without a region, the region markers alone."""
    start = prompt.rfind(REGION_START)
    end = prompt.find(REGION_END, start)
    if start < 0 or end < 0:
        return f"{REGION_START}\n{REGION_END}\n"
    opening = prompt.rfind("```", 0, start)
    opening = opening if opening >= 0 else start
    closing = prompt.find("\n```", end)
    closing = closing + 4 if closing >= 0 else len(prompt)
    region = prompt[start + len(REGION_START):end].replace(CURSOR, "")
    for old, new in pairs:
        region = region.replace(old, new)
    head = prompt[opening:start]
    tail = prompt[end:closing]
    return head + REGION_START + region + tail
