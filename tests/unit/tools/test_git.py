"""Tests for server/agentls/tools/git/read.py: real git repositories in tmp_path."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agentls.tools.git.read import MAX_LOG_ENTRIES, git_diff, git_facts, git_log, git_status
from agentls.workspace.fence import Workspace

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True, env=env)
    return done.stdout


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("def main():\n    return 1\n")
    (root / "old_name.py").write_text("x = 1\n")
    (root / "secret.key").write_text("KEY-1234\n")
    (root / ".gitignore").write_text("build/\n")
    commit_all(root, "first commit")
    (root / "README.md").write_text("# Demo\n")
    commit_all(root, "add readme")
    return root


# --- not a repository ---------------------------------------------------------------------


async def test_not_a_git_repository_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    ws = Workspace([tmp_path])
    for result in (await git_status(ws), await git_diff(ws), await git_log(ws)):
        assert result["ok"] is False
        assert result["error"] == "NOT_A_GIT_REPO"
        assert "not a git repository" in result["message"]
        assert "read_file" in result["message"]


async def test_git_facts_of_a_plain_folder_is_none(tmp_path: Path) -> None:
    assert await git_facts(tmp_path) is None


# --- status -------------------------------------------------------------------------------


async def test_status_of_a_clean_repository(repo: Path) -> None:
    result = await git_status(Workspace([repo]))
    assert result["ok"] is True
    assert result["branch"] == "main"
    assert result["clean"] is True
    assert result["changes"] == []
    assert result["upstream"] is None


async def test_status_lists_changes_in_short_format(repo: Path) -> None:
    (repo / "app.py").write_text("def main():\n    return 2\n")
    git(repo, "mv", "old_name.py", "new_name.py")
    (repo / "notes.txt").write_text("todo\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.js").write_text("ignored\n")
    result = await git_status(Workspace([repo]))
    assert result["clean"] is False
    assert sorted(result["changes"]) == sorted(
        [" M app.py", "R  old_name.py -> new_name.py", "?? notes.txt"]
    )


async def test_status_hides_what_the_fence_hides(repo: Path) -> None:
    (repo / "secret.key").write_text("KEY-5678\n")
    (repo / ".env").write_text("TOKEN=abc\n")
    (repo / "app.py").write_text("changed\n")
    result = await git_status(Workspace([repo]))
    assert result["changes"] == [" M app.py"]
    assert result["hidden"] == 2


async def test_status_of_a_repository_without_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "trunk")
    (tmp_path / "a.txt").write_text("a\n")
    result = await git_status(Workspace([tmp_path]))
    assert result["branch"] == "trunk"
    assert result["changes"] == ["?? a.txt"]
    assert result["notes"] == ["no commits yet"]


async def test_status_ahead_of_upstream(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    (clone / "app.py").write_text("local change\n")
    commit_all(clone, "local work")
    result = await git_status(Workspace([clone]))
    assert result["upstream"] == "origin/main"
    assert (result["ahead"], result["behind"]) == (1, 0)


async def test_root_below_the_repository_top_sees_only_its_folder(repo: Path) -> None:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "mod.py").write_text("a = 1\n")
    commit_all(repo, "add pkg")
    (repo / "pkg" / "mod.py").write_text("a = 2\n")
    (repo / "app.py").write_text("outside the root\n")
    ws = Workspace([repo / "pkg"])
    status = await git_status(ws)
    assert status["changes"] == [" M mod.py"]
    diff = await git_diff(ws)
    assert diff["files"] == ["M mod.py"]
    assert "outside the root" not in diff["diff"]


async def test_paths_with_spaces_and_unicode(repo: Path) -> None:
    folder = repo / "dir with space"
    folder.mkdir()
    (folder / "café.py").write_text("a = 1\n")
    commit_all(repo, "unicode")
    (folder / "café.py").write_text("a = 2\n")
    ws = Workspace([repo])
    assert (await git_status(ws))["changes"] == [" M dir with space/café.py"]
    assert (await git_diff(ws))["files"] == ["M dir with space/café.py"]


async def test_git_dir_in_the_environment_is_ignored(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "other-branch")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert (await git_status(Workspace([repo])))["branch"] == "main"


# --- diff ---------------------------------------------------------------------------------


async def test_diff_of_unstaged_changes(repo: Path) -> None:
    (repo / "app.py").write_text("def main():\n    return 2\n")
    result = await git_diff(Workspace([repo]))
    assert result["ok"] is True
    assert result["files"] == ["M app.py"]
    assert "-    return 1" in result["diff"]
    assert "+    return 2" in result["diff"]
    assert "\x1b[" not in result["diff"]  # no colour


async def test_diff_of_staged_changes(repo: Path) -> None:
    (repo / "app.py").write_text("staged\n")
    git(repo, "add", "app.py")
    (repo / "README.md").write_text("unstaged\n")
    staged = await git_diff(Workspace([repo]), staged=True)
    assert staged["files"] == ["M app.py"]
    assert "+staged" in staged["diff"] and "unstaged" not in staged["diff"]
    unstaged = await git_diff(Workspace([repo]))
    assert unstaged["files"] == ["M README.md"]


async def test_diff_limited_to_a_path(repo: Path) -> None:
    (repo / "app.py").write_text("one\n")
    (repo / "README.md").write_text("two\n")
    result = await git_diff(Workspace([repo]), path="README.md")
    assert result["files"] == ["M README.md"]
    assert "+one" not in result["diff"]


@pytest.mark.parametrize(
    ("path", "code"),
    [("../outside.py", "OUTSIDE_WORKSPACE"), ("/etc/passwd", "OUTSIDE_WORKSPACE"),
     (".git/config", "DENIED"), ("build/out.js", "IGNORED")],
)
async def test_diff_path_goes_through_the_fence(repo: Path, path: str, code: str) -> None:
    result = await git_diff(Workspace([repo]), path=path)
    assert result["ok"] is False
    assert result["error"] == code


async def test_diff_never_shows_denied_files(repo: Path) -> None:
    (repo / "secret.key").write_text("KEY-NEW-9999\n")
    (repo / "app.py").write_text("visible change\n")
    result = await git_diff(Workspace([repo]))
    assert result["files"] == ["M app.py"]
    assert result["hidden"] == 1
    assert "KEY-" not in result["diff"]
    assert "+visible change" in result["diff"]


async def test_diff_with_only_denied_changes_says_so(repo: Path) -> None:
    (repo / "secret.key").write_text("KEY-NEW-9999\n")
    result = await git_diff(Workspace([repo]))
    assert result["files"] == [] and result["diff"] == ""
    assert "hides" in result["message"]


async def test_empty_diff_points_at_staged_and_untracked_changes(repo: Path) -> None:
    (repo / "app.py").write_text("staged\n")
    git(repo, "add", "app.py")
    (repo / "new.txt").write_text("new\n")
    result = await git_diff(Workspace([repo]))
    assert result["files"] == []
    assert "staged" in result["message"] and "untracked" in result["message"]


async def test_external_diff_drivers_do_not_run(repo: Path) -> None:
    marker = repo.parent / "ran"
    git(repo, "config", "diff.external", f"touch {marker}; false")
    (repo / "app.py").write_text("changed\n")
    result = await git_diff(Workspace([repo]))
    assert "+changed" in result["diff"]
    assert not marker.exists()


# --- log ----------------------------------------------------------------------------------


async def test_log_lists_recent_commits_newest_first(repo: Path) -> None:
    result = await git_log(Workspace([repo]))
    assert result["ok"] is True
    commits = result["commits"]
    assert len(commits) == 2
    assert commits[0].endswith("Ada: add readme")
    assert commits[1].endswith("Ada: first commit")


@pytest.mark.parametrize(("n", "shown"), [(1, 1), (0, 1), (-3, 1), (500, MAX_LOG_ENTRIES)])
async def test_log_count_is_clamped(repo: Path, n: int, shown: int) -> None:
    for i in range(3):
        (repo / "app.py").write_text(f"v{i}\n")
        commit_all(repo, f"change {i}")
    result = await git_log(Workspace([repo]), n=n)
    assert result["n"] == shown
    assert len(result["commits"]) == min(shown, 5)
    assert ("notes" in result) == (n != shown)


async def test_log_of_a_repository_without_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    result = await git_log(Workspace([tmp_path]))
    assert result["ok"] is True
    assert result["commits"] == []
    assert "no commits" in result["message"]


# --- facts --------------------------------------------------------------------------------


async def test_git_facts(repo: Path) -> None:
    (repo / "app.py").write_text("changed\n")
    (repo / "secret.key").write_text("changed\n")
    ws = Workspace([repo])
    facts = await git_facts(ws.roots[0], ws.is_visible)
    assert facts is not None
    assert facts.branch == "main"
    assert facts.changed_files == (" M app.py",)
    assert (facts.ahead, facts.behind) == (0, 0)
    assert len(facts.last_commits) == 2 and facts.last_commits[0].endswith("add readme")
    unfiltered = await git_facts(ws.roots[0])
    assert unfiltered is not None and len(unfiltered.changed_files) == 2


async def test_git_facts_detached_head(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    facts = await git_facts(repo)
    assert facts is not None and facts.branch is None


# --- several roots ------------------------------------------------------------------------


async def test_two_roots_one_repository(repo: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (repo / "app.py").write_text("changed\n")
    ws = Workspace([repo, plain])
    status = await git_status(ws)
    assert status["ok"] is True
    assert status["changes"] == [" M repo/app.py"]
    diff = await git_diff(ws)
    assert diff["files"] == ["M repo/app.py"]
