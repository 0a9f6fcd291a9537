"""How the engine's tool calls look in an ACP client: the kind (read, edit, search, execute,
fetch ...), a title a person can read, the locations the editor can follow, and the diff of
each edit (``diff`` content: path, old text, new text)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TextContentBlock,
    ToolCallLocation,
)

from agentls.workspace.fence import FenceError, Workspace

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch",
                   "switch_mode", "other"]

KINDS: dict[str, ToolKind] = {
    "list_files": "read", "read_file": "read", "git_status": "read", "git_diff": "read",
    "git_log": "read", "search_text": "search", "search_semantic": "search",
    "write_file": "edit", "edit_file": "edit", "apply_patch": "edit", "delete_file": "delete",
    "shell_exec": "execute", "ask_user": "think",
    # The language servers' answers (tools/code_intel.py) and the loop's check of its work.
    "diagnostics": "read", "definition": "read", "hover": "read", "references": "search",
    "workspace_symbols": "search", "check": "think",
}
EDIT_TOOLS = frozenset({"write_file", "edit_file", "apply_patch", "delete_file"})
OUTPUT_LIMIT = 8_000  # characters of a command's output shown in the client


def kind_of(name: str) -> ToolKind:
    if name.startswith(("fetch", "web_")):
        return "fetch"
    return KINDS.get(name, "other")


def parse_arguments(arguments: str) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def title_of(name: str, args: dict[str, Any]) -> str:
    path = args.get("path")
    if name == "shell_exec":
        return f"Run `{args.get('command', '')}`"
    if name == "search_text":
        return f"Search for `{args.get('pattern', args.get('query', ''))}`"
    if name == "search_semantic":
        return f"Search for code about “{args.get('query', '')}”"
    if name == "apply_patch":
        return "Apply a patch"
    if name == "check":
        return "Check the changed files with the language servers"
    if name in ("definition", "references", "hover"):
        target = args.get("symbol") or f"line {args.get('line', '?')}"
        return f"{name.capitalize()} of {target} in {path}"
    if name == "diagnostics":
        return f"Diagnostics of {', '.join(args.get('paths') or []) or 'the changed files'}"
    if name == "workspace_symbols":
        return f"Symbols matching `{args.get('query', '')}`"
    verbs = {"read_file": "Read", "list_files": "List", "write_file": "Write",
             "edit_file": "Edit", "delete_file": "Delete"}
    if name in verbs:
        return f"{verbs[name]} {path or '.'}"
    if name.startswith("git_"):
        return name.replace("_", " ")
    if name.startswith("mcp__"):  # mcp__SERVER__tool
        server, _, tool = name[len("mcp__"):].partition("__")
        return f"{tool or server} ({server} MCP server)"
    return name


def locations_of(workspace: Workspace, name: str, args: dict[str, Any]) -> list[ToolCallLocation]:
    path = args.get("path")
    if not isinstance(path, str):
        return []
    try:
        resolved = workspace.resolve(path).abs
    except (FenceError, OSError, ValueError):
        return []
    line = args.get("start_line")
    return [ToolCallLocation(path=str(resolved), line=line if isinstance(line, int) else None)]


def edit_diffs(workspace: Workspace, paths: list[Path]) -> list[FileEditToolCallContent]:
    """The pending change of each file as a ``diff`` block (from the base the agent saw)."""
    out = []
    changeset = workspace.changeset
    for path in paths:
        base = changeset.base(path)
        new = changeset.current_text(path)
        if base is None:
            continue
        out.append(FileEditToolCallContent(type="diff", path=str(path), old_text=base.text,
                                           new_text=new if new is not None else ""))
    return out


def touched_paths(workspace: Workspace, name: str, args: dict[str, Any]) -> list[Path]:
    if name == "apply_patch":
        return [p for p in workspace.changeset.paths()]
    path = args.get("path")
    if not isinstance(path, str):
        return []
    try:
        return [workspace.resolve(path).abs]
    except (FenceError, OSError, ValueError):
        return []


def text_content(text: str) -> ContentToolCallContent:
    if len(text) > OUTPUT_LIMIT:
        cut = len(text) - OUTPUT_LIMIT
        half = OUTPUT_LIMIT // 2
        text = f"{text[:half]}\n… [{cut} characters cut] …\n{text[-half:]}"
    return ContentToolCallContent(type="content",
                                  content=TextContentBlock(type="text", text=text))
