"""The built-in tools' code: their parameter models and runners, imported on the first call.

The request only needs the tools' names, descriptions and schemas: ``registry`` carries them
as data (``tool_schemas.py``, generated from the models here and in ``files``), so a run sends
its first request before this module, the file tools, search, shell and git are imported.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentls.tools import code_intel, files
from agentls.tools.git import read as git
from agentls.tools.output import fail
from agentls.tools.search import text as search
from agentls.tools.shell import shell_exec as shell
from agentls.tools.tool_context import Runner, ToolContext
from agentls.workspace.fence import Workspace

# --- parameter models of the tools that are not file tools ---------------------------------


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchTextParams(_Params):
    query: str = Field(min_length=1, description="Text to find.")
    path: str = Field(".", description="Folder or file to search.")
    regex: bool = Field(False, description="query is a regular expression.")
    case_sensitive: bool = Field(False)
    glob: str | None = Field(None, description="Only files matching this glob ('*.py').")
    max_results: int = Field(50, ge=1, le=search.MAX_RESULTS_LIMIT)


class SearchSemanticParams(_Params):
    query: str = Field(min_length=1, description="What to find, in words: 'where are "
                       "rate limits retried'.")
    top_k: int = Field(8, ge=1, le=30, description="Code chunks to return.")


class ShellExecParams(_Params):
    command: str = Field(min_length=1, description="The command line.")
    cwd: str | None = Field(None, description="Folder to run in, relative to the root.")
    timeout: float = Field(30, gt=0, le=shell.MAX_TIMEOUT,
                           description="Seconds before the command is killed (max 600).")


class GitStatusParams(_Params):
    pass


class GitDiffParams(_Params):
    path: str | None = Field(None, description="Only this file or folder.")
    staged: bool = Field(False, description="Staged changes instead of unstaged.")


class GitLogParams(_Params):
    n: int = Field(5, ge=1, le=git.MAX_LOG_ENTRIES, description="Number of commits.")


def _sync(function: Callable[[Workspace, Any], dict[str, Any]], *, thread: bool) -> Runner:
    async def run(ctx: ToolContext, params: Any) -> dict[str, Any]:
        if thread:  # reads may walk big trees: keep the event loop (the editor) responsive
            return await asyncio.to_thread(function, ctx.workspace, params)
        return function(ctx.workspace, params)

    return run


async def _search(ctx: ToolContext, p: SearchTextParams) -> dict[str, Any]:
    return await search.search_text(ctx.workspace, p.query, p.path, p.regex, p.case_sensitive,
                                    p.glob, p.max_results)


# Embedding the chunks a tool call finds without vectors stops after this long; the rest is
# still found by keywords, and the editor's background indexing catches up.
SEARCH_EMBED_BUDGET_S = 10.0


def _search_semantic_sync(ctx: ToolContext, p: SearchSemanticParams) -> dict[str, Any]:
    if ctx.search_index is None:
        return fail("UNAVAILABLE", "search_semantic is not available in this run; use "
                    "search_text with likely identifiers instead.")
    index = ctx.search_index()
    warnings: list[str] = []
    if not index.update_lock.locked():  # a background pass is running: search what is there
        stats = index.update(embed_budget_s=SEARCH_EMBED_BUDGET_S)
        warnings.extend(stats.warnings)
    result = index.search(p.query, p.top_k, interactive=True)
    if result.warning:
        warnings.append(result.warning)
    out: dict[str, Any] = {"ok": True, "mode": result.mode,
                           "results": [h.to_dict() for h in result.hits]}
    if not result.hits:
        out["hint"] = ("Nothing matched. Rephrase with other words, or use search_text for "
                       "an exact identifier.")
    if warnings:
        out["warning"] = "; ".join(dict.fromkeys(warnings))
    return out


async def _search_semantic(ctx: ToolContext, p: SearchSemanticParams) -> dict[str, Any]:
    return await asyncio.to_thread(_search_semantic_sync, ctx, p)


async def _shell(ctx: ToolContext, p: ShellExecParams) -> dict[str, Any]:
    return await ctx.sandbox.run(ctx.workspace, p.command, p.cwd, p.timeout,
                                 api_key_env=ctx.api_key_env,
                                 output_limit=ctx.shell_output_limit)


async def _git_status(ctx: ToolContext, p: GitStatusParams) -> dict[str, Any]:
    return await git.git_status(ctx.workspace)


async def _git_diff(ctx: ToolContext, p: GitDiffParams) -> dict[str, Any]:
    return await git.git_diff(ctx.workspace, p.path, p.staged)


async def _git_log(ctx: ToolContext, p: GitLogParams) -> dict[str, Any]:
    return await git.git_log(ctx.workspace, p.n)


# What each built-in tool checks its arguments with and runs (the registry's names).
TOOLS: dict[str, tuple[type[BaseModel], Runner]] = {
    "list_files": (files.ListFilesParams, _sync(files.list_files, thread=True)),
    "read_file": (files.ReadFileParams, _sync(files.read_file, thread=True)),
    "search_text": (SearchTextParams, _search),
    "search_semantic": (SearchSemanticParams, _search_semantic),
    "write_file": (files.WriteFileParams, _sync(files.write_file, thread=False)),
    "edit_file": (files.EditFileParams, _sync(files.edit_file, thread=False)),
    "apply_patch": (files.ApplyPatchParams, _sync(files.apply_patch, thread=False)),
    "delete_file": (files.DeleteFileParams, _sync(files.delete_file, thread=False)),
    "shell_exec": (ShellExecParams, _shell),
    "git_status": (GitStatusParams, _git_status),
    "git_diff": (GitDiffParams, _git_diff),
    "git_log": (GitLogParams, _git_log),
    "diagnostics": (code_intel.DiagnosticsParams, code_intel.diagnostics),
    "definition": (code_intel.PositionParams, code_intel.definition),
    "references": (code_intel.ReferencesParams, code_intel.references),
    "workspace_symbols": (code_intel.WorkspaceSymbolsParams, code_intel.workspace_symbols),
    "hover": (code_intel.PositionParams, code_intel.hover),
}
