"""The Codex apply_patch scenarios (../shared/peer/codex-apply-patch), run through the code
users run: the apply_patch tool on a real Workspace, its ChangeSet, and the atomic
``apply_to_disk``. Each case copies input/ to a temporary folder, applies patch.txt, and
compares the whole tree with expected/ byte for byte. Git cannot store empty directories, so
only files are compared.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agentls.tools.files import ApplyPatchParams, apply_patch
from agentls.workspace.changeset import ChangeSetError
from agentls.workspace.fence import FenceError, Workspace

# Ours is atomic: where the reference keeps what succeeded before a failure, we change nothing.
ATOMIC_CASES = {"015_failure_after_partial_success_leaves_changes"}


def _cases_dir() -> Path:
    shared = os.environ.get("AGENTLS_SHARED_DIR")
    if shared:
        return Path(shared) / "peer" / "codex-apply-patch"
    repo = Path(__file__).resolve().parents[3]
    for shared in (repo.parent / "shared", repo.parent.parent / "shared"):  # main, worktrees
        if (shared / "peer" / "codex-apply-patch").is_dir():
            return shared / "peer" / "codex-apply-patch"
    return repo.parent / "shared" / "peer" / "codex-apply-patch"


CASES_DIR = _cases_dir()
CASES = sorted(p.name for p in CASES_DIR.iterdir() if p.is_dir()) if CASES_DIR.is_dir() else []


def _tree(root: Path) -> dict[str, bytes]:
    if not root.is_dir():
        return {}
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def apply_through_the_tool(root: Path, patch_text: str) -> str | None:
    """Apply with the real tool and write the ChangeSet to disk; the refusal, if any."""
    workspace = Workspace([root])
    try:
        result = apply_patch(workspace, ApplyPatchParams(patch=patch_text))
    except (FenceError, ChangeSetError) as exc:
        return str(exc)
    if not result["ok"]:
        return str(result["message"])
    workspace.changeset.apply_to_disk()
    return None


@pytest.mark.skipif(not CASES, reason=f"codex-apply-patch cases not found at {CASES_DIR}")
@pytest.mark.parametrize("case", CASES or ["<no cases>"])
def test_codex_scenario(case: str, tmp_path: Path) -> None:
    case_dir = CASES_DIR / case
    work = tmp_path / "tree"
    if (case_dir / "input").is_dir():
        shutil.copytree(case_dir / "input", work, copy_function=shutil.copyfile)  # writable
    else:
        work.mkdir()
    before = _tree(work)
    expected = before if case in ATOMIC_CASES else _tree(case_dir / "expected")
    patch_text = (case_dir / "patch.txt").read_bytes().decode("utf-8")

    failure = apply_through_the_tool(work, patch_text)

    assert _tree(work) == expected
    # In this suite a patch that leaves the tree as it was is one that must be refused.
    if expected == before:
        assert failure, "the patch should have been refused"
    else:
        assert failure is None, failure
