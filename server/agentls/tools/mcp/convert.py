"""What the model sees of MCP tools: names, schemas, results.

- Names: ``mcp__SERVER__tool``; characters a model API refuses in a function name (anything
  outside ``[A-Za-z0-9_-]``) become ``_``, names over 64 characters are cut and end with a
  short hash, and two tools that would end with the same name are told apart by a suffix.
- Schemas: trimmed to what the model needs (titles, ``$schema``, ``$id``, examples and
  ``$comment`` dropped, ``$ref`` inlined, descriptions cut to 300 characters, an array
  without ``items`` given ``items: {}``, which OpenAI requires), checked as
  JSON Schema; a tool whose schema is not valid, or not an object schema, is left out and
  named in ``agentls mcp`` (a model API would refuse the whole request for it).
- Results: text as is; images and audio as a line naming their type and size (chat-completions
  tool results carry text only); resource links and embedded resources with their URI, where
  a ``file:`` URI must lie inside the workspace fence or is withheld; all of it redacted and
  cut to the server's ``output_limit``.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

from agentls.policy.redaction import redact
from agentls.tools.output import truncate_middle
from agentls.workspace.fence import FenceError, Workspace

PREFIX = "mcp__"
MAX_NAME = 64
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_DROPPED_KEYS = {"title", "$schema", "$id", "examples", "$comment"}
MAX_DESCRIPTION = 300
_RELAY_CUT = re.compile(r"\n\[\.\.\. (\d+) characters cut by AgentLS[^\]]*\]\n")


def tool_name(server: str, tool: str, taken: set[str]) -> str:
    """The name the model calls; added to ``taken``."""
    name = f"{PREFIX}{server}__{_INVALID.sub('_', tool) or 'tool'}"
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(tool.encode()).hexdigest()[:6]
        name = f"{name[:MAX_NAME - 7]}_{digest}"
    base, index = name, 2
    while name in taken:
        suffix = f"_{index}"
        name = base[:MAX_NAME - len(suffix)] + suffix
        index += 1
    taken.add(name)
    return name


def trim_schema(schema: Any) -> dict[str, Any]:
    """The schema the model gets; ``ValueError`` naming the problem when it is unusable."""
    if not isinstance(schema, dict):
        raise ValueError("the input schema is not a JSON object")
    definitions: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        found = schema.get(key)
        if isinstance(found, dict):
            definitions.update(found)

    def clean(node: Any, depth: int) -> Any:
        if depth > 32:
            raise ValueError("the input schema is nested too deeply (or refers to itself)")
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                target = definitions.get(ref.rsplit("/", 1)[-1])
                if target is None:
                    raise ValueError(f"the input schema refers to {ref!r}, which it lacks")
                return clean(target, depth + 1)
            out: dict[str, Any] = {}
            for key, value in node.items():
                if key in _DROPPED_KEYS or key in ("$defs", "definitions"):
                    continue
                if key == "description" and isinstance(value, str):
                    out[key] = _short(value)
                elif key == "properties" and isinstance(value, dict):
                    out[key] = {name: clean(sub, depth + 1) for name, sub in value.items()}
                else:
                    out[key] = clean(value, depth + 1)
            kind = out.get("type")
            if (kind == "array" or (isinstance(kind, list) and "array" in kind)) and \
                    "items" not in out:
                out["items"] = {}  # OpenAI refuses an array schema without items
            return out
        if isinstance(node, list):
            return [clean(item, depth + 1) for item in node]
        return node

    trimmed: dict[str, Any] = clean(schema, 0)
    if trimmed.get("type", "object") != "object":
        raise ValueError(f"the input schema's type is {trimmed.get('type')!r}, not 'object'")
    trimmed["type"] = "object"
    trimmed.setdefault("properties", {})
    from jsonschema import SchemaError, validators  # type: ignore[import-untyped]

    try:
        validators.validator_for(trimmed).check_schema(trimmed)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "the root"
        raise ValueError(f"the input schema is not valid JSON Schema at {where}: "
                         f"{exc.message}") from None
    return trimmed


def _short(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_DESCRIPTION else text[:MAX_DESCRIPTION - 1] + "…"


def description(server: str, tool: str, text: str) -> str:
    first = _short(text) or f"The {tool} tool."
    return f"{first} (MCP server {server}, tool {tool})"


def result_to_dict(result: Any, ws: Workspace, limit: int) -> dict[str, Any]:
    """A ``CallToolResult`` as a tool result: ``{"ok", "content"[, "structured"]}``."""
    parts: list[str] = []
    withheld: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            size = _decoded_size(block.data)
            parts.append(f"[{kind} {block.mime_type}, {size:,} bytes: not shown, the model "
                         "API takes text only in tool results]")
        elif kind == "resource_link":
            uri = str(block.uri)
            if _fenced(uri, ws, withheld):
                label = block.name or uri
                parts.append(f"[resource link: {label} <{uri}>"
                             f"{' ' + block.mime_type if block.mime_type else ''}]")
        elif kind == "resource":
            resource = block.resource
            uri = str(resource.uri)
            if not _fenced(uri, ws, withheld):
                continue
            text = getattr(resource, "text", None)
            if text is not None:
                parts.append(f"[resource {uri}]\n{text}")
            else:
                size = _decoded_size(getattr(resource, "blob", ""))
                parts.append(f"[resource {uri}: binary, {size:,} bytes, not shown]")
        else:
            parts.append(f"[content of type {kind!r} not shown]")
    text = redact("\n".join(parts))
    out: dict[str, Any] = {"ok": not bool(getattr(result, "is_error", False))}
    if not out["ok"]:
        out["error"] = "MCP_TOOL_ERROR"
    if len(text) > limit:
        # Cut before parsing too (stdout_cap): count what that relay already took out.
        size = len(_RELAY_CUT.sub("", text)) + sum(int(n) for n in _RELAY_CUT.findall(text))
        out["truncated"] = f"{size:,} characters cut to {limit:,} (the server's output_limit)"
        text = truncate_middle(text, limit)
    out["content"] = text
    structured = getattr(result, "structured_content", None)
    if structured is not None and not parts:
        import json

        dumped = redact(json.dumps(structured, ensure_ascii=False, default=str))
        out["structured"] = truncate_middle(dumped, limit)
    if withheld:
        out["withheld"] = withheld
    return out


def resource_result(read: Any) -> Any:
    """A ``ReadResourceResult`` in the shape of a tool result (embedded resources), so it is
    fenced, capped and redacted the same way."""
    from types import SimpleNamespace

    blocks = [SimpleNamespace(type="resource", resource=c) for c in read.contents or []]
    return SimpleNamespace(content=blocks, is_error=False, structured_content=None)


def _fenced(uri: str, ws: Workspace, withheld: list[str]) -> bool:
    """Whether a URI may reach the model: anything but a file outside the fence."""
    if not uri.startswith("file:"):
        return True
    try:
        ws.resolve(uri)
    except FenceError as exc:
        withheld.append(f"{uri}: {exc.message}")
        return False
    return True


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (ValueError, TypeError):
        return len(data or "")
