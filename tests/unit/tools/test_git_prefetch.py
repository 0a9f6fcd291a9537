"""Tests for server/agentls/tools/git/prefetch.py: git commands started early (`agentls run`
starts the project facts' git commands while it imports the engine), real git."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from tests.unit.tools.test_git import commit_all, git

from agentls.tools.git import prefetch as git_prefetch
from agentls.tools.git.read import git_facts


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("x = 1\n")
    commit_all(root, "first commit")
    (root / "app.py").write_text("x = 2\n")
    (root / "new.py").write_text("y = 1\n")
    return root.resolve()


@pytest.fixture(autouse=True)
def _nothing_left() -> Iterator[None]:
    yield
    git_prefetch.discard_all()


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[tuple[tuple[str, ...], bool]]:
    """(args, taken from a prefetch) of every git command tools/git/read.py runs."""
    seen: list[tuple[tuple[str, ...], bool]] = []
    take = git_prefetch.take

    def recording_take(root: Path, args: Sequence[str]) -> subprocess.Popen[bytes] | None:
        found = take(root, args)
        seen.append((tuple(args), found is not None))
        return found

    monkeypatch.setattr(git_prefetch, "take", recording_take)
    return seen


async def test_the_prefetched_commands_are_the_ones_git_facts_runs(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _recording(monkeypatch)
    plain = await git_facts(repo)
    assert tuple(args for args, _ in seen) == git_prefetch.FACTS_COMMANDS
    assert not any(taken for _, taken in seen)

    seen.clear()
    assert git_prefetch.start(repo) == len(git_prefetch.FACTS_COMMANDS)
    prefetched = await git_facts(repo)
    assert seen == [(args, True) for args in git_prefetch.FACTS_COMMANDS]
    assert prefetched == plain
    assert plain is not None and "?? new.py" in plain.changed_files
    assert git_prefetch.take(repo, git_prefetch.FACTS_COMMANDS[0]) is None  # taken once

    seen.clear()
    await git_facts(repo)  # nothing started any more: spawned as usual
    assert not any(taken for _, taken in seen)


async def test_a_prefetch_older_than_its_time_to_live_is_run_again(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git_prefetch.start(repo)
    (repo / "later.py").write_text("z = 1\n")  # the tree changes after the prefetch
    monkeypatch.setattr(git_prefetch, "PREFETCH_TTL_S", 0.0)
    seen = _recording(monkeypatch)
    facts = await git_facts(repo)
    assert not any(taken for _, taken in seen)
    assert facts is not None and "?? later.py" in facts.changed_files


async def test_prefetch_in_a_plain_folder_answers_as_git_would(tmp_path: Path) -> None:
    git_prefetch.start(tmp_path)
    assert await git_facts(tmp_path) is None


def test_without_git_nothing_starts(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repo / "no-such-bin"))
    assert git_prefetch.start(repo) == 0


def test_what_nobody_takes_is_killed_and_reaped(repo: Path) -> None:
    git_prefetch.start(repo, [("log", "--format=%H")])
    process = git_prefetch.take(repo, ("log", "--format=%H"))
    assert process is not None
    git_prefetch.start(repo, [("status",), ("status",)])  # the second replaces the first
    git_prefetch.discard_all()
    assert git_prefetch.take(repo, ("status",)) is None
    process.communicate()
    assert process.returncode == 0


async def test_commands_started_from_a_thread_are_taken_once_it_has_spawned_them(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`agentls run` spawns them from a thread (each spawn waits for git to begin): git_facts
    waits for that thread, then takes every one instead of running its own."""
    seen = _recording(monkeypatch)
    plain = await git_facts(repo)
    seen.clear()
    git_prefetch.start_soon(repo)
    assert await git_facts(repo) == plain
    assert seen == [(args, True) for args in git_prefetch.FACTS_COMMANDS]
