"""Which MCP tools a request needs: BM25-like word overlap between the request and each
tool's name and description (``mcp.max_tools_in_prompt``), and ``mcp_find_tools``."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentls.policy.permissions import Permission
from agentls.tools.output import fail

if TYPE_CHECKING:
    from agentls.tools.mcp.connection import McpConnection

CALL_TOOL = "mcp_call_tool"
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class McpTool:
    """One tool of one server, as the model names it."""

    name: str  # mcp__server__tool
    server: str
    tool: str  # its name on the server
    description: str
    schema: dict[str, Any]
    permission: Permission
    connection: McpConnection
    words: Counter[str] = field(default_factory=Counter)
    kind: str = "tool"  # "resource": reads one of the server's resources (its `uri` argument)
_STOP = frozenset({"a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for",
    "from", "get", "give", "has", "have", "how", "i", "in", "is", "it", "its", "me", "my", "of",
    "on", "or", "please", "set", "show", "tell", "that", "the", "them", "then", "there", "this",
    "to", "us", "use", "want", "we", "what", "when", "where", "which", "who", "why", "will",
    "with", "you", "your"})


def words(text: str) -> Counter[str]:
    return Counter(w for w in _WORD.findall(text.lower().replace("_", " "))
                   if w not in _STOP and len(w) > 1)


def most_relevant(tools: Sequence[McpTool], prompt: str, limit: int) -> list[McpTool]:
    """All tools when they fit; else the ``limit`` best by BM25-like word overlap with the
    request (ties keep the servers' order)."""
    if len(tools) <= limit:
        return list(tools)
    return [t for _, _, t in sorted(
        ((-_score(t, words(prompt), tools), i, t) for i, t in enumerate(tools)),
        key=lambda x: (x[0], x[1]))[:limit]]


def _score(tool: McpTool, query: Counter[str], tools: Sequence[McpTool]) -> float:
    total = 0.0
    for word in query:
        if word not in tool.words:
            continue
        having = sum(1 for t in tools if word in t.words)
        total += math.log(1 + len(tools) / having)
    return total


def find_tools(tools: Sequence[McpTool], query: str, limit: int = 10) -> dict[str, Any]:
    """The ``mcp_find_tools`` result: the best matches with their schemas."""
    query_words = words(query)
    ranked = sorted(((-_score(t, query_words, tools), i, t) for i, t in enumerate(tools)),
                    key=lambda x: (x[0], x[1]))
    hits = [t for score, _, t in ranked if score < 0][:limit]
    if not hits:
        return fail("NO_MATCH", f"No MCP tool matches {query!r}. Try other words; servers: "
                    + ", ".join(sorted({t.server for t in tools})) + ".")
    return {"ok": True, "how_to_call": f"call {CALL_TOOL} with name and arguments",
            "tools": [{"name": t.name, "description": t.description, "parameters": t.schema}
                      for t in hits]}


