"""Staged changes and branch changes from real git repositories in tmp_path."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentls.tools.git.branch_changes import branch_changes, staged_changes
from agentls.tools.git.read import GitError


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "T")
    git(root, "config", "commit.gpgsign", "false")
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "init")
    return root


async def test_staged_diff_only_not_unstaged_edits(repo: Path) -> None:
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "new.py").write_text("x = 1\n")
    git(repo, "add", "calc.py")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b  # unstaged\n")
    changes = await staged_changes(repo)
    assert changes.files == ("M calc.py",)
    assert "+    return a + b\n" in changes.diff
    assert "unstaged" not in changes.diff and "new.py" not in changes.diff
    assert "calc.py | 2 +-" in changes.stat


async def test_nothing_staged_and_not_a_repo_say_what_to_do(repo: Path,
                                                            tmp_path: Path) -> None:
    (repo / "calc.py").write_text("changed\n")
    with pytest.raises(GitError) as caught:
        await staged_changes(repo)
    assert caught.value.code == "NOTHING_STAGED" and "git add" in caught.value.message
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(GitError) as caught:
        await staged_changes(plain)
    assert caught.value.code == "NOT_A_GIT_REPO" and "git init" in caught.value.message


async def test_hidden_files_never_reach_the_diff(repo: Path) -> None:
    (repo / ".env").write_text("API_KEY=secret\n")
    (repo / "calc.py").write_text("changed\n")
    git(repo, "add", "-f", ".env", "calc.py")
    changes = await staged_changes(repo, visible=lambda p: p.name != ".env")
    assert changes.hidden == 1 and changes.paths == ("calc.py",)
    assert "secret" not in changes.diff and ".env" not in changes.stat
    git(repo, "reset", "-q", "calc.py")
    with pytest.raises(GitError, match=r"only staged changes .* are in files AgentLS hides"):
        await staged_changes(repo, visible=lambda p: p.name != ".env")


async def test_a_rename_is_listed_with_both_names(repo: Path) -> None:
    git(repo, "mv", "calc.py", "maths.py")
    changes = await staged_changes(repo)
    assert changes.files == ("R calc.py -> maths.py",)


async def test_branch_changes_against_main(repo: Path) -> None:
    git(repo, "checkout", "-qb", "feature/sum")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "commit", "-qam", "fix add")
    (repo / "test_calc.py").write_text("assert True\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "test add")
    found = await branch_changes(repo)
    assert found.branch == "feature/sum" and found.base == "main"
    assert [c.split(" ", 1)[1] for c in found.commits] == ["fix add", "test add"]
    assert set(found.changes.paths) == {"calc.py", "test_calc.py"}
    assert "+    return a + b" in found.changes.diff


async def test_branch_base_prefers_the_remote_default(repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    git(repo, "remote", "set-head", "origin", "main")
    (repo / "calc.py").write_text("ahead\n")
    git(repo, "commit", "-qam", "local work on main")
    found = await branch_changes(repo)  # on main itself: compared with origin/HEAD
    assert found.base == "origin/HEAD"
    assert [c.split(" ", 1)[1] for c in found.commits] == ["local work on main"]


async def test_no_base_and_no_changes_are_explained(repo: Path) -> None:
    git(repo, "branch", "-m", "main", "trunk")
    with pytest.raises(GitError) as caught:
        await branch_changes(repo)
    assert caught.value.code == "NO_BASE" and "Pass the base" in caught.value.message
    with pytest.raises(GitError) as caught:
        await branch_changes(repo, base="trunk")
    assert caught.value.code == "NO_CHANGES"
    with pytest.raises(GitError) as caught:
        await branch_changes(repo, base="nope")
    assert caught.value.code == "NO_BASE" and "'nope'" in caught.value.message
