"""The Codex apply_patch scenarios (../shared/peer/codex-apply-patch), run against patch.py.

Each case copies input/ to a temporary folder, parses and plans patch.txt against it, writes
the planned changes with a small writer local to this test, and compares the whole tree with
expected/ byte for byte. Git cannot store empty directories, so only files are compared.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from agentls.tools.patch import FileChange, PatchError, parse_patch, plan_patch

# Ours is atomic: where the reference keeps what succeeded before a failure, we change nothing.
ATOMIC_CASES = {"015_failure_after_partial_success_leaves_changes"}


def _cases_dir() -> Path:
    shared = os.environ.get("AGENTLS_SHARED_DIR")
    if shared:
        return Path(shared) / "peer" / "codex-apply-patch"
    return Path(__file__).resolve().parents[3] / ".." / "shared" / "peer" / "codex-apply-patch"


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


def _reader(root: Path) -> Callable[[str], str | None]:
    def read(path: str) -> str | None:
        target = root / path
        return target.read_bytes().decode("utf-8") if target.is_file() else None

    return read


def _write(root: Path, changes: list[FileChange]) -> None:
    for change in changes:
        source = root / change.path
        if change.kind == "delete":
            source.unlink()
            continue
        assert change.new_text is not None
        target = root / (change.new_path or change.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(change.new_text.encode("utf-8"))
        if change.new_path is not None:
            source.unlink()


@pytest.mark.skipif(not CASES, reason=f"codex-apply-patch cases not found at {CASES_DIR}")
@pytest.mark.parametrize("case", CASES or ["<no cases>"])
def test_codex_scenario(case: str, tmp_path: Path) -> None:
    case_dir = CASES_DIR / case
    work = tmp_path / "tree"
    if (case_dir / "input").is_dir():
        shutil.copytree(case_dir / "input", work)
    else:
        work.mkdir()
    before = _tree(work)
    expected = before if case in ATOMIC_CASES else _tree(case_dir / "expected")
    patch_text = (case_dir / "patch.txt").read_bytes().decode("utf-8")

    try:
        changes = plan_patch(parse_patch(patch_text), _reader(work))
    except PatchError as error:
        failure: PatchError | None = error
    else:
        failure = None
        _write(work, changes)

    assert _tree(work) == expected
    # In this suite a patch that leaves the tree as it was is one that must be refused.
    if expected == before:
        assert failure is not None, "the patch should have been refused"
        assert str(failure)
    else:
        assert failure is None, str(failure)
