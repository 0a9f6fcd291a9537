"""Nested AGENTS.md files: listed by a real `find` (started early or on demand) and checked
against the fence, with the walk in Python as the fallback; both give the same answer."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentls.tools import nested_agents
from agentls.tools.workspace import Workspace

EXPECTED = [
    ".hidden/AGENTS.md",   # a hidden folder is searched (the fence does not hide it)
    "a/AGENTS.md",
    "linked/AGENTS.md",    # a link named AGENTS.md is listed (read_inside checks its target)
    "a/b/AGENTS.md",
    "deep/x/y/z/AGENTS.md",
]


def write(path: Path, text: str = "rules\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    top = tmp_path / "project"
    write(top / "AGENTS.md")                        # the root's own: not a nested one
    write(top / "a" / "AGENTS.md")
    write(top / "a" / "b" / "AGENTS.md")
    write(top / ".hidden" / "AGENTS.md")
    write(top / "deep" / "x" / "y" / "z" / "AGENTS.md")
    write(top / "node_modules" / "pkg" / "AGENTS.md")  # a skipped folder
    write(top / "a" / "build" / "AGENTS.md")        # skipped at any depth
    write(top / ".gitignore", "ignored/\n")
    write(top / "ignored" / "AGENTS.md")            # git-ignored
    write(top / "sub" / ".gitignore", "inner/\n")
    write(top / "sub" / "inner" / "AGENTS.md")      # ignored by a nested .gitignore
    write(top / "secret" / "AGENTS.md")             # on the deny list below
    (top / "link-to-a").symlink_to(top / "a")       # a linked folder is not followed
    (top / "linked").mkdir()
    (top / "linked" / "AGENTS.md").symlink_to(top / "a" / "AGENTS.md")
    return top.resolve()


@pytest.fixture(autouse=True)
def nothing_left_started() -> object:
    yield
    nested_agents.discard_all()


def workspace(root: Path) -> Workspace:
    return Workspace([root], deny=("secret/",))


def test_find_lists_what_the_walk_finds(root: Path) -> None:
    ws = workspace(root)
    assert nested_agents.files(ws, root) == EXPECTED
    with ws.listing():
        walked = nested_agents._walk(ws, root)
    assert sorted(walked, key=lambda p: (p.count("/"), p)) == EXPECTED


def test_a_listing_started_early_is_taken_once(root: Path) -> None:
    assert nested_agents.start(root)
    started = nested_agents._started[str(root)][1]
    assert nested_agents.files(workspace(root), root) == EXPECTED
    assert str(root) not in nested_agents._started
    assert started.returncode == 0  # it was this one that answered, and it was reaped


def test_a_listing_started_too_long_ago_is_not_used(root: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    assert nested_agents.start(root)
    write(root / "later" / "AGENTS.md")  # made after the early listing
    monkeypatch.setattr(nested_agents, "PREFETCH_TTL_S", 0.0)
    time.sleep(0.01)
    assert "later/AGENTS.md" in nested_agents.files(workspace(root), root)


@pytest.mark.parametrize("command", [["false"], ["sh", "-c", "echo bad option >&2; exit 1"]])
def test_a_find_that_fails_falls_back_to_the_walk(root: Path, command: list[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nested_agents, "find_command", lambda _root: command)
    assert nested_agents.files(workspace(root), root) == EXPECTED


def test_a_find_that_hangs_is_stopped_and_the_folders_walked(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nested_agents, "find_command", lambda _root: ["sleep", "30"])
    monkeypatch.setattr(nested_agents, "FIND_TIMEOUT_S", 0.2)
    started = time.monotonic()
    assert nested_agents.files(workspace(root), root) == EXPECTED
    assert time.monotonic() - started < 10


def test_without_find_the_folders_are_walked(root: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(root / "no-such-bin"))
    assert not nested_agents.start(root)
    assert nested_agents.files(workspace(root), root) == EXPECTED



def test_plainly_ignored_folders_are_not_entered(root: Path) -> None:
    write(root / ".gitignore", "ignored/\n# build output\ntarget/\n/out\n*.log\ndocs/gen/\n")
    write(root / "target" / "AGENTS.md")
    write(root / "src" / "target" / "AGENTS.md")
    write(root / "out" / "AGENTS.md")
    write(root / "src" / "out" / "AGENTS.md")  # /out is anchored: this one is searched
    assert nested_agents.ignored_names(root) == ({"ignored", "target"}, {"out"})
    command = nested_agents.find_command(root)
    assert "target" in command and str(root / "out") in command
    assert "*.log" not in command and "docs/gen" not in " ".join(command)
    assert nested_agents.files(workspace(root), root) == sorted(
        [*EXPECTED, "src/out/AGENTS.md"], key=lambda p: (p.count("/"), p))


def test_a_gitignore_with_negations_names_no_folder(root: Path) -> None:
    write(root / ".gitignore", "target/\n!target/keep/\n")
    assert nested_agents.ignored_names(root) == (set(), set())
