"""search_text: ripgrep over the workspace, held to the fence, seeing the run's pending changes.

ripgrep does the walking and matching (`--json`, sorted by path so results are stable and
the first N are the same every time). Its ignore rules are set to approximate the fence
(`.gitignore` inside the roots, `.agentlsignore`, the deny list as globs) and every file
with a hit is re-checked with ``Workspace.is_visible``, so rg may only ever show too much,
never leak. Files the ChangeSet touched are searched in their pending text instead of on
disk, and so are files open in the editor, but only those rg finds a match in on disk
(the workspace lists no open buffers). Without `rg`, a slower pure-Python walk gives the
same results (it searches every open buffer).

Here: the tool's entry point. The engines are ``search_rg.py`` and ``search_python.py``; the
state they share (targets, hits, the result) is ``search_state.py``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Literal

from agentls.tools.output import fail
from agentls.tools.search.python_walk import walk_python
from agentls.tools.search.ripgrep import (
    find_rg,
    run_rg,
)
from agentls.tools.search.state import (
    MAX_RESULTS_LIMIT,
    InvalidRegex,
    SearchState,
    search_result,
    search_targets,
)
from agentls.workspace.fence import FenceError

if TYPE_CHECKING:
    from agentls.workspace.fence import Workspace

log = logging.getLogger(__name__)

Engine = Literal["auto", "rg", "python"]


_fallback_warned = False


async def search_text(
    ws: Workspace,
    query: str,
    path: str = ".",
    regex: bool = False,
    case_sensitive: bool = False,
    glob: str | None = None,
    max_results: int = 50,
    *,
    engine: Engine = "auto",
) -> dict[str, Any]:
    """Lines matching ``query`` under ``path``, sorted by path, line and column.

    ``glob`` follows ripgrep's `--glob` (`*.py`, `src/**/*.ts`, `!tests/**`). At most
    ``max_results`` (1..500) lines are returned; ``truncated`` says there were more and
    ``total_seen`` how many were seen (counting stops at ``COUNT_LIMIT``).
    ``engine`` forces ripgrep or the pure-Python walk (tests, benchmarks).
    """
    if not query:
        return fail("EMPTY_QUERY", "The query is empty. Pass the text (or regex) to search for.")
    if "\n" in query:
        return fail(
            "MULTILINE_QUERY",
            "search_text matches within one line; the query contains a line break. Search "
            "for a single line of the text instead.",
        )
    limit = min(max(int(max_results), 1), MAX_RESULTS_LIMIT)
    try:
        targets = search_targets(ws, path)
    except FenceError as exc:
        return fail(exc.code, exc.message)

    rg = find_rg() if engine != "python" else None
    if engine == "rg" and rg is None:
        return fail("RG_NOT_FOUND", "ripgrep (rg) is not installed; search with engine='auto'.")
    if rg is None:
        _warn_fallback()

    search = SearchState(ws, query, regex, case_sensitive, glob, limit)
    try:
        for target in targets:
            if search.stopped:
                break
            if rg is not None:
                await run_rg(rg, search, target)
            else:
                await asyncio.to_thread(walk_python, search, target)
        search.add_overlay(targets)
    except InvalidRegex as exc:
        return fail(
            "INVALID_REGEX",
            f"The regex {query!r} is invalid: {exc}. Fix it, or pass regex=false to search "
            "for the text literally.",
        )
    return search_result(search, path, limit)


def _warn_fallback() -> None:
    global _fallback_warned
    if not _fallback_warned:
        _fallback_warned = True
        log.warning("ripgrep (rg) not found: search_text uses a pure-Python search, slower.")


