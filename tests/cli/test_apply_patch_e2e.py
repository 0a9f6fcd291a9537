"""One codex apply_patch scenario end to end: the scripted model sends the patch through
`agentls run`, and the tree on disk matches codex's expected result (010: a move overwrites an
existing destination)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.cli.headless_helpers import agentls, call
from tests.unit.tools.test_codex_conformance import CASES_DIR, _tree

from agentls.devtools.replay.command import ReplayServer

CASE = CASES_DIR / "010_move_overwrites_existing_destination"


@pytest.mark.skipif(not CASE.is_dir(), reason=f"codex-apply-patch cases not found at {CASES_DIR}")
def test_move_onto_an_existing_file_through_agentls_run(
        server: ReplayServer, env: dict[str, str], tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(CASE / "input", project, copy_function=shutil.copyfile)
    patch = (CASE / "patch.txt").read_text(encoding="utf-8")
    server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("apply_patch", "c1", patch=patch)]}},
        {"match": {"tool": "apply_patch"}, "reply": {"text": "Moved."}}]})
    done = agentls("run", "-p", "apply the patch", "--cwd", str(project), "--yes", env=env)
    assert done.returncode == 0, done.stderr
    tree = {k: v for k, v in _tree(project).items() if not k.startswith(".agentls/")}
    assert tree == _tree(CASE / "expected")
