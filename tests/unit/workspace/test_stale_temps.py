"""A killed apply's leftovers (``.name.xxxx.agentls-tmp`` / ``-bak``) stay out of the agent's
view: search, listing and reads are fenced off from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentls.tools.search.text import search_text
from agentls.workspace.fence import FenceError, Workspace


@pytest.mark.parametrize("engine", ["rg", "python"])
async def test_leftover_temp_files_are_not_search_results(tmp_path: Path, engine: str) -> None:
    (tmp_path / "a.py").write_text("needle = 1\n")
    (tmp_path / ".a.py.0badf00d.agentls-tmp").write_text("needle = 2\n")
    (tmp_path / ".a.py.0badf00d.agentls-bak").write_text("needle = 3\n")
    found = await search_text(Workspace([tmp_path]), "needle", engine=engine)  # type: ignore[arg-type]
    assert found["matches"] == ["a.py:1:1: needle = 1"]


def test_leftover_temp_files_cannot_be_read(tmp_path: Path) -> None:
    (tmp_path / ".a.py.0badf00d.agentls-tmp").write_text("x\n")
    with pytest.raises(FenceError):
        Workspace([tmp_path]).resolve(".a.py.0badf00d.agentls-tmp")
