"""Related code for a chat request (``index.chat_context`` > 0): the best matches of the
workspace's search index for the request's words, added to the turn's message before the
request, so the model starts where the code is instead of guessing names.

The index is searched as it is (no update pass: that would put indexing on the path of every
chat); what it finds is named by path, lines and symbol with a short snippet, within a token
share of the prompt budget. A search that fails leaves the section out (logged), never the
chat.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from agentls.engine.prompt.outline import CountTokens

if TYPE_CHECKING:
    from agentls.index.service import WorkspaceSearch

log = logging.getLogger(__name__)

HEADING = "## Code the workspace index relates to the request"


def related_section(open_index: Callable[[], WorkspaceSearch], prompt: str, top_k: int,
                    count_tokens: CountTokens, cap_tokens: int) -> str | None:
    """The section to add, or None (off, nothing found, no room, or the index failed)."""
    if top_k <= 0 or cap_tokens <= 0 or not prompt.strip():
        return None
    try:
        result = open_index().search(prompt, top_k)
    except Exception as exc:  # the chat goes on without it; the log says why
        log.warning("related code for the request left out: the search index failed: %s", exc)
        return None
    if not result.hits:
        return None
    lines = [f"{HEADING} (search index, {result.mode}; read_file for more):"]
    used = count_tokens(lines[0])
    for hit in result.hits:
        where = f"{hit.path}:{hit.start_line}-{hit.end_line}"
        symbol = f" `{hit.symbol}`" if hit.symbol else ""
        entry = f"- {where}{symbol}\n  " + "\n  ".join(hit.snippet.splitlines()[:6])
        cost = count_tokens(entry)
        if used + cost > cap_tokens:
            break
        lines.append(entry)
        used += cost
    return "\n".join(lines) if len(lines) > 1 else None
