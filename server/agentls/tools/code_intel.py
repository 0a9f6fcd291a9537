"""The model's eyes: diagnostics, definition, references, workspace_symbols and hover from
the project's own language servers (``agentls.langservers``), over its pending edits.

Answers are compact text the model reads well: ``path:line:column`` with the line's text,
counts, trimmed to a budget; paths go through the fence like every tool's. The servers are
the run's ``ToolContext.code_intel`` (None: no server covers the workspace, and the tools
are not offered). A server that fails is named with why, beside what the others answered.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from agentls.tools.output import fail
from agentls.tools.tool_context import ToolContext
from agentls.workspace.fence import FenceError, Workspace

if TYPE_CHECKING:
    from agentls.langservers.results import Answer, FileProblems, Place, Problem

MAX_PROBLEMS = 60
MAX_PLACES = 100
MESSAGE_CHARS = 300
LINE_CHARS = 160
HOVER_CHARS = 2_000


class _Params(BaseModel):
    # Built on a tool's first call: a check of the loop's changes (engine/check.py) imports
    # this module for its helpers, before any of these tools may have been called.
    model_config = ConfigDict(extra="forbid", defer_build=True)


class DiagnosticsParams(_Params):
    paths: list[str] = Field(default_factory=list, description="Files to check; empty: the "
                             "files you changed this turn.")
    severity: str = Field("warning", pattern="^(error|warning|info|hint)$",
                          description="Least severity shown: error, warning, info or hint.")


class PositionParams(_Params):
    path: str = Field(min_length=1, description="The file.")
    line: int = Field(ge=1, description="Line number (1-based).")
    symbol: str | None = Field(None, description="The name on that line to ask about "
                               "(its first whole-word occurrence).")
    column: int | None = Field(None, ge=1, description="Or the column (1-based) instead of "
                               "symbol.")


class ReferencesParams(PositionParams):
    max_results: int = Field(50, ge=1, le=MAX_PLACES)


class WorkspaceSymbolsParams(_Params):
    query: str = Field(min_length=1, description="A name or part of one.")
    max_results: int = Field(30, ge=1, le=MAX_PLACES)


_RANK = {"error": 0, "warning": 1, "info": 2, "hint": 3}


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def problem_line(p: Problem) -> str:
    """``path:line:col severity (new): message [code source] | the line``."""
    tag = " (new)" if p.new else ""
    origin = " ".join(x for x in (p.code, p.source) if x)
    where = f" [{origin}]" if origin else ""
    text = f" | {_cut(p.line_text, LINE_CHARS)}" if p.line_text.strip() else ""
    return (f"{p.path}:{p.line}:{p.column} {p.severity}{tag}: "
            f"{_cut(p.message, MESSAGE_CHARS)}{where}{text}")


def place_line(p: Place) -> str:
    name = f"{p.kind} {p.name}".strip()
    head = f"{name}{f' (in {p.container})' if p.container else ''}  " if name else ""
    text = f": {_cut(p.line_text, LINE_CHARS)}" if p.line_text.strip() else ""
    return f"{head}{p.path}:{p.line}:{p.column}{text}"


def count_of(files: Sequence[FileProblems], severity: str, *, new_only: bool = False) -> int:
    return sum(1 for f in files for p in f.problems
               if p.severity == severity and (p.new or not new_only))


def _unavailable(ctx: ToolContext) -> dict[str, Any] | None:
    if ctx.code_intel is None:
        return fail("UNAVAILABLE", "No language server covers this workspace; use "
                    "read_file and search_text instead.")
    return None


def _failures(answer: Answer, out: dict[str, Any]) -> dict[str, Any]:
    if answer.failures:
        out["servers_failed"] = {k: _cut(v, 600) for k, v in answer.failures.items()}
    return out


async def diagnostics(ctx: ToolContext, p: DiagnosticsParams) -> dict[str, Any]:
    if (refused := _unavailable(ctx)) is not None:
        return refused
    assert ctx.code_intel is not None
    ws = ctx.workspace
    if p.paths:
        paths = [ws.resolve(path).abs for path in p.paths]
    else:
        paths = changed_files(ws)
        if not paths:
            return {"ok": True, "summary": "You changed no file this turn; give paths to "
                    "check others."}
    answer = await ctx.code_intel.diagnostics(ws, paths)
    least = _RANK[p.severity]
    shown = [x for f in answer.files for x in f.problems if _RANK.get(x.severity, 3) <= least]
    shown.sort(key=lambda x: (not x.new, _RANK.get(x.severity, 3), x.path, x.line))
    unserved = [f.path for f in answer.files if not f.servers]
    out: dict[str, Any] = {"ok": True, "summary": summary_words(answer.files)}
    if shown:
        out["problems"] = [problem_line(x) for x in shown[:MAX_PROBLEMS]]
        if len(shown) > MAX_PROBLEMS:
            out["more"] = f"{len(shown) - MAX_PROBLEMS} more not shown"
    if unserved and not answer.failures:
        out["not_checked"] = unserved[:20]
    return _failures(answer, out)


def summary_words(files: Sequence[FileProblems]) -> str:
    """``3 files: 2 errors (1 new), 1 warning`` — what a check found, in one line."""
    parts = []
    for severity in ("error", "warning"):
        total = count_of(files, severity)
        new = count_of(files, severity, new_only=True)
        if total:
            parts.append(f"{total} {severity}{'s' if total != 1 else ''}"
                         + (f" ({new} new)" if new else ""))
    checked = sum(1 for f in files if f.servers)
    head = f"{checked} file{'s' if checked != 1 else ''} checked"
    return f"{head}: {', '.join(parts)}" if parts else f"{head}: no errors or warnings"


def changed_files(ws: Workspace) -> list[Path]:
    """The files this run changed that still exist (created, updated, renamed to)."""
    return [c.path for c in ws.changeset.changes() if c.text is not None]


def _column(ws: Workspace, path: Path, p: PositionParams) -> int | str:
    """The 1-based column asked about, or why it cannot be found (for the model)."""
    if p.column is not None:
        return p.column
    lines = ws.read_text(ws.resolve(str(path))).splitlines()
    if p.line > len(lines):
        return f"{ws.display_path(path)} has {len(lines)} lines, not {p.line}"
    text = lines[p.line - 1]
    if p.symbol is None:
        return len(text) - len(text.lstrip()) + 1
    found = re.search(rf"(?<![\w$]){re.escape(p.symbol)}(?![\w$])", text) or \
        re.search(re.escape(p.symbol), text)
    if found is None:
        return (f"{p.symbol!r} is not on line {p.line} of {ws.display_path(path)}; that line "
                f"reads: {_cut(text, LINE_CHARS)!r}")
    return found.start() + 1


async def _position(ctx: ToolContext, p: PositionParams) -> tuple[Path, int] | dict[str, Any]:
    if (refused := _unavailable(ctx)) is not None:
        return refused
    ws = ctx.workspace
    path = ws.resolve(p.path).abs
    try:
        column = await asyncio.to_thread(_column, ws, path, p)
    except FenceError as exc:
        return fail(exc.code, exc.message)
    if isinstance(column, str):
        return fail("NOT_FOUND", column + ". Give the line where the name appears.")
    return path, column


def _places(answer: Answer, limit: int, what: str) -> dict[str, Any]:
    out: dict[str, Any] = {"ok": True, "count": len(answer.places)}
    if answer.places:
        out[what] = [place_line(x) for x in answer.places[:limit]]
        if len(answer.places) > limit:
            out["more"] = f"{len(answer.places) - limit} more not shown"
    elif not answer.failures:
        out["summary"] = f"No {what} found" + (
            "" if answer.servers else " (no server answered for this file)")
    return _failures(answer, out)


async def definition(ctx: ToolContext, p: PositionParams) -> dict[str, Any]:
    where = await _position(ctx, p)
    if isinstance(where, dict):
        return where
    assert ctx.code_intel is not None
    answer = await ctx.code_intel.definition(ctx.workspace, where[0], p.line, where[1])
    return _places(answer, MAX_PLACES, "definitions")


async def references(ctx: ToolContext, p: ReferencesParams) -> dict[str, Any]:
    where = await _position(ctx, p)
    if isinstance(where, dict):
        return where
    assert ctx.code_intel is not None
    answer = await ctx.code_intel.references(ctx.workspace, where[0], p.line, where[1])
    return _places(answer, p.max_results, "references")


async def workspace_symbols(ctx: ToolContext, p: WorkspaceSymbolsParams) -> dict[str, Any]:
    if (refused := _unavailable(ctx)) is not None:
        return refused
    assert ctx.code_intel is not None
    answer = await ctx.code_intel.workspace_symbols(ctx.workspace, p.query)
    return _places(answer, p.max_results, "symbols")


async def hover(ctx: ToolContext, p: PositionParams) -> dict[str, Any]:
    where = await _position(ctx, p)
    if isinstance(where, dict):
        return where
    assert ctx.code_intel is not None
    answer = await ctx.code_intel.hover(ctx.workspace, where[0], p.line, where[1])
    text = answer.text.strip()
    out: dict[str, Any] = {"ok": True}
    if text:
        out["hover"] = text if len(text) <= HOVER_CHARS else text[:HOVER_CHARS - 1] + "…"
    elif not answer.failures:
        out["summary"] = "Nothing to show at that position."
    return _failures(answer, out)
