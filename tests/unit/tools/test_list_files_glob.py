"""list_files globs mean what they mean in ripgrep's -g and .gitignore (pathspec)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentls.tools import files
from agentls.workspace.fence import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    for name in ("setup.py", "src/setup.py", "src/pkg/test_a.py", "src/test_b.py",
                 "tests/test_c.py", "docs/guide.md", "README.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n")
    return Workspace([tmp_path])


def listed(ws: Workspace, pattern: str, path: str = ".") -> list[str]:
    result = files.list_files(ws, files.ListFilesParams(path=path, recursive=True,
                                                        pattern=pattern))
    assert result["ok"], result
    return [e for e in result["entries"] if not e.endswith("/")]


def test_double_star_crosses_folders_and_matches_zero_of_them(ws: Workspace) -> None:
    assert listed(ws, "src/**/test_*.py") == ["src/pkg/test_a.py", "src/test_b.py"]


def test_a_leading_slash_anchors_at_the_root(ws: Workspace) -> None:
    assert listed(ws, "/setup.py") == ["setup.py"]
    assert listed(ws, "setup.py") == ["setup.py", "src/setup.py"]


def test_a_single_star_stays_within_one_folder(ws: Workspace) -> None:
    # fnmatch let '*' cross '/', so 'src/*.py' also matched src/pkg/test_a.py.
    assert listed(ws, "src/*.py") == ["src/setup.py", "src/test_b.py"]


def test_globs_may_be_relative_to_the_listed_folder(ws: Workspace) -> None:
    assert listed(ws, "pkg/*.py", path="src") == ["src/pkg/test_a.py"]
    assert listed(ws, "src/pkg/*.py", path="src") == ["src/pkg/test_a.py"]


def test_a_folder_pattern_lists_what_is_inside(ws: Workspace) -> None:
    assert listed(ws, "docs/") == ["docs/guide.md"]
