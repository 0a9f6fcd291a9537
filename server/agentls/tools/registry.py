"""The toolbox the engine offers the model: schemas, argument checks, permissions, dispatch.

Whatever the model sends, a call ends as a small JSON result the model can read: unknown
tools, malformed JSON, wrong argument types, refusals by the fence or the permission policy
and unexpected failures all come back as ``{"ok": false, "error": CODE, "message": ...}``.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from agentls.tools import tool_schemas
from agentls.tools.output import fail, to_json
from agentls.tools.permission_gate import Decision, check, rejection
from agentls.tools.tool_context import Runner as Runner
from agentls.tools.tool_context import ToolContext as ToolContext
from agentls.workspace.fence import FenceError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolSchema:
    """What the model is told about a tool (OpenAI function format, minus the wrapper)."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    params: type[BaseModel] | str  # BUILTIN: the built-in tool's model, imported when called
    run: Runner
    read_only: bool
    # A tool from outside (MCP): its JSON Schema as given (``params`` then takes any
    # arguments; the server checks them), its own time and result limits, whether its schema
    # is listed in the request, and whether it forwards to the tool its arguments name.
    schema: dict[str, Any] | None = None
    timeout_s: float | None = None
    result_limit: int | None = None
    listed: bool = True
    forwards: bool = False


@dataclass(frozen=True)
class ToolOutcome:
    name: str
    arguments: dict[str, Any] | None  # None when the model's arguments could not be parsed
    result: dict[str, Any]
    text: str  # the result as the model reads it (JSON, cut to the result limit)
    read_only: bool

    @property
    def ok(self) -> bool:
        return bool(self.result.get("ok"))


# ``ToolDef.params`` of a built-in tool: its model is ``builtin.TOOLS[name]``, imported with
# the tool's code on the first call (the schema sent before that is data: tool_schemas.py).
BUILTIN = "built-in"


def _builtin(name: str) -> Runner:
    """A built-in tool's runner, its module imported on the first call."""

    async def run(ctx: ToolContext, params: Any) -> dict[str, Any]:
        from agentls.tools import builtin

        return await builtin.TOOLS[name][1](ctx, params)

    return run


DEFAULT_TOOLS: tuple[ToolDef, ...] = (
    ToolDef("list_files", "List a folder (sorted; ignored and secret files hidden). Folders "
            "end with '/'.",
            BUILTIN, _builtin("list_files"), True),
    ToolDef("read_file", "Read a text file with line numbers. Over 2,000 lines it is cut: ask "
            "for start_line/end_line.",
            BUILTIN, _builtin("read_file"), True),
    ToolDef("search_text", "Search file contents (ripgrep). Returns path:line:column: line.",
            BUILTIN, _builtin("search_text"), True),
    ToolDef("search_semantic", "Find code by meaning: 'where is X handled' when you do not "
            "know the names (search_text for an exact string).",
            BUILTIN, _builtin("search_semantic"), True),
    ToolDef("write_file", "Create a file, or overwrite/append to one (to change a file, "
            "prefer edit_file or apply_patch).",
            BUILTIN, _builtin("write_file"), False),
    ToolDef("edit_file", "Change a file by exact search/replace blocks.",
            BUILTIN, _builtin("edit_file"), False),
    ToolDef("apply_patch", "Add, update, move and delete files in one patch; all of it "
            "applies or none.",
            BUILTIN, _builtin("apply_patch"), False),
    ToolDef("delete_file", "Delete a file (not a folder).",
            BUILTIN, _builtin("delete_file"), False),
    ToolDef("shell_exec", "Run a shell command in the workspace (tests, builds, linters), in "
            "a sandbox without network that sees your pending changes; files it writes join "
            "your changes (shown in the result). Output is cut to its head and tail.",
            BUILTIN, _builtin("shell_exec"), False),
    ToolDef("git_status", "The branch and changed files.",
            BUILTIN, _builtin("git_status"), True),
    ToolDef("git_diff", "Uncommitted (or staged) changes as a unified diff.",
            BUILTIN, _builtin("git_diff"), True),
    ToolDef("git_log", "The last commits.", BUILTIN, _builtin("git_log"), True),
    # The project's language servers over your pending edits (offered when one covers it).
    ToolDef("diagnostics", "Errors and warnings from the project's language servers (type "
            "checker, linter) for files as you changed them; no paths: the files you changed "
            "this turn. Problems your changes introduced are marked (new).",
            BUILTIN, _builtin("diagnostics"), True),
    ToolDef("definition", "Where a name is defined (path:line: the line), as the language "
            "server resolves it, your pending edits included.",
            BUILTIN, _builtin("definition"), True),
    ToolDef("references", "Every use of a name across the workspace (count, path:line: the "
            "line), your pending edits included: check callers before changing a signature.",
            BUILTIN, _builtin("references"), True),
    ToolDef("workspace_symbols", "Find functions, classes and other symbols by name "
            "(kind name path:line).", BUILTIN, _builtin("workspace_symbols"), True),
    ToolDef("hover", "The type and documentation of a name, as the language server shows it.",
            BUILTIN, _builtin("hover"), True),
)

CODE_INTEL_TOOLS = frozenset(
    ("diagnostics", "definition", "references", "workspace_symbols", "hover"))
"""Offered only when a language server covers the workspace (``tools/code_intel.py``)."""


@functools.cache
def schema_of(params: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of a parameter model, inlined and without titles; computed once.

    It is sent with every request, so it is kept lean: an optional ``X | None = None`` is
    written as plain ``X`` (leaving it out of ``required`` already says it may be omitted),
    and ``"additionalProperties": false`` is left out (~400 bytes over all tools; it matters
    only to strict mode, which AgentLS does not ask for): an argument the tool does not take
    is still refused, with its name, when the call is checked.
    """
    raw = params.model_json_schema()
    definitions = raw.pop("$defs", {})

    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return clean(definitions[node["$ref"].rsplit("/", 1)[-1]])
            node = _without_null_option(node)
            return {k: clean(v) for k, v in node.items()
                    if k != "title" and not (k == "additionalProperties" and v is False)}
        if isinstance(node, list):
            return [clean(item) for item in node]
        return node

    schema: dict[str, Any] = clean(raw)
    schema.setdefault("properties", {})
    return schema


def prepare_schemas(tools: Sequence[ToolDef] = DEFAULT_TOOLS) -> None:
    """Build the tools' schemas now (``schema_of`` keeps them), so the first run does not."""
    for tool in tools:
        _schema(tool)


def params_of(tool: ToolDef) -> type[BaseModel]:
    """The model a tool's arguments are checked with (a built-in's is imported now)."""
    if isinstance(tool.params, str):
        from agentls.tools import builtin

        return builtin.TOOLS[tool.name][0]
    return tool.params


# tool_schemas.SOURCE_HASH is the hash of these, in this order (devtools/tool_schema_table.py).
SCHEMA_SOURCES = ("builtin.py", "files.py", "search/text.py", "shell/shell_exec.py", "git/read.py",
                  "code_intel.py")


@functools.cache
def schema_table_is_current() -> bool:
    """Whether tool_schemas.py was generated from the models as they are; a stale table is
    never used (the schemas then come from the models, imported)."""
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    try:
        for name in SCHEMA_SOURCES:
            digest.update((package / name).read_bytes())
    except OSError:
        return False
    return digest.hexdigest() == tool_schemas.SOURCE_HASH


def _without_null_option(node: dict[str, Any]) -> dict[str, Any]:
    """``{"anyOf": [X, {"type": "null"}], "default": null}`` -> ``X`` (with the description)."""
    options = node.get("anyOf")
    if not (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options
            and node.get("default") is None):
        return node
    (kept,) = [o for o in options if o != {"type": "null"}]
    rest = {k: v for k, v in node.items() if k not in ("anyOf", "default")}
    return {**kept, **rest}


class ToolBox:
    def __init__(
        self,
        context: ToolContext,
        tools: Sequence[ToolDef] = DEFAULT_TOOLS,
        *,
        only: Iterable[str] | None = None,
    ) -> None:
        wanted = set(only) if only is not None else None
        self.context = context
        # The language servers' tools only where one covers the workspace.
        absent = CODE_INTEL_TOOLS if context.code_intel is None else frozenset()
        self._tools = {t.name: t for t in tools
                       if (wanted is None or t.name in wanted) and t.name not in absent}
        self._schemas = [
            ToolSchema(t.name, t.description, _schema(t)) for t in self._tools.values()
            if t.listed
        ]

    def schemas(self) -> list[ToolSchema]:
        return list(self._schemas)

    def names(self) -> list[str]:
        return list(self._tools)

    def is_read_only(self, name: str) -> bool:
        tool = self._tools.get(name)
        return tool is not None and tool.read_only

    async def call(self, name: str, arguments: str | Mapping[str, Any]) -> ToolOutcome:
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(self._tools)
            return self._outcome(name, None, fail(
                "UNKNOWN_TOOL", f"There is no tool named {name!r}. Available tools: "
                f"{available}."), read_only=True)
        args = self._parse(arguments)
        if isinstance(args, str):
            return self._outcome(name, None, self._invalid(tool, args), tool.read_only)
        if tool.forwards:
            return await self._forward(tool, args)
        try:
            params = params_of(tool).model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors()
            )
            return self._outcome(name, args, self._invalid(tool, problems), tool.read_only)

        try:
            shell_mode = self.context.sandbox.mode() if name == "shell_exec" else None
            decision = await check(self.context.policy, name, args, self.context.confirm,
                                   grants=self.context.grants, shell_mode=shell_mode)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a prompt that fails (closed terminal) is no approval
            log.exception("asking to approve %s failed", name)
            decision = Decision("deny", f"the approval prompt failed ({exc})")
        if decision.permission != "allow":
            return self._outcome(name, args, rejection(decision), tool.read_only)
        limit = tool.timeout_s or self.context.tool_timeout_s
        if name == "shell_exec":
            from agentls.tools.builtin import ShellExecParams

            if isinstance(params, ShellExecParams):
                limit = max(limit, params.timeout + 5)
        try:
            async with asyncio.timeout(limit):
                result = await tool.run(self.context, params)
        except TimeoutError:
            result = fail("TOOL_TIMEOUT", f"{name} did not finish within {limit:g} s and was "
                          "stopped. Try a narrower request (a smaller path, a shorter command).")
        except FenceError as exc:
            result = fail(exc.code, exc.message)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in a tool must not end the run: tell the model
            log.exception("tool %s failed", name)
            result = fail("TOOL_FAILED", f"{name} failed unexpectedly: {exc}. Try another "
                          "approach; the failure has been logged.")
        return self._outcome(name, args, result, tool.read_only, tool.result_limit)

    async def _forward(self, tool: ToolDef, args: dict[str, Any]) -> ToolOutcome:
        """A call that names the tool to run (``mcp_call_tool``): judged, asked and reported
        as a call of that tool."""
        target, arguments = args.get("name"), args.get("arguments", {})
        found = self._tools.get(target) if isinstance(target, str) else None
        if found is None or found.forwards or found.listed:
            why = "it is listed: call it directly" if found is not None and found.listed \
                else "there is no such unlisted tool: find it with mcp_find_tools first"
            return self._outcome(tool.name, args, fail(
                "UNKNOWN_TOOL", f"{tool.name} cannot call {target!r}: {why}."), True)
        if not isinstance(arguments, Mapping):
            return self._outcome(tool.name, args, self._invalid(
                tool, "arguments must be a JSON object"), True)
        return await self.call(str(target), arguments)

    @staticmethod
    def _parse(arguments: str | Mapping[str, Any]) -> dict[str, Any] | str:
        if isinstance(arguments, Mapping):
            return dict(arguments)
        try:
            value = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})"
        if not isinstance(value, dict):
            return "the arguments must be a JSON object"
        return value

    @staticmethod
    def _invalid(tool: ToolDef, problem: str) -> dict[str, Any]:
        return fail(
            "INVALID_ARGUMENTS",
            f"Call to {tool.name} not run: {problem}. Send arguments matching the schema.",
            schema=_schema(tool),
        )

    def _outcome(self, name: str, args: dict[str, Any] | None, result: dict[str, Any],
                 read_only: bool, limit: int | None = None) -> ToolOutcome:
        return ToolOutcome(name, args, result, to_json(result, limit or self.context.result_limit),
                           read_only)


def _schema(tool: ToolDef) -> dict[str, Any]:
    if tool.schema is not None:
        return tool.schema
    if tool.params == BUILTIN and tool.name in tool_schemas.SCHEMAS and schema_table_is_current():
        return tool_schemas.SCHEMAS[tool.name]
    return schema_of(params_of(tool))
