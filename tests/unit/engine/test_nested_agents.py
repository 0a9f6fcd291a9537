"""The walk for nested AGENTS.md files that remembers itself (engine/prompt/nested_agents.py): the
same answer as a full walk after every kind of change, for one stat per unchanged folder."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentls.engine.prompt import nested_agents
from agentls.engine.prompt.nested_agents import nested_agents_files
from agentls.workspace.fence import Workspace

PAST = time.time() - 3600


def write(path: Path, text: str = "rules\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def settle(root: Path) -> None:
    """Every folder's mtime an hour back, as in a repository nobody touched lately (a folder
    changed within RECENT_S of a walk is looked into again anyway)."""
    for folder, _, _ in os.walk(root):
        os.utime(folder, (PAST, PAST))


def found(root: Path, ws: Workspace | None = None) -> list[str]:
    ws = ws or Workspace([root])
    with ws.listing():
        return nested_agents_files(ws, ws.roots[0])


@pytest.fixture(autouse=True)
def fresh_memory() -> Iterator[None]:
    nested_agents.forget()
    yield
    nested_agents.forget()


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The folders listed (os.scandir, os.walk's too), in order."""
    listed: list[str] = []
    real = os.scandir

    def counting(path: str) -> Iterator[os.DirEntry[str]]:
        listed.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(nested_agents.os, "scandir", counting)
    return listed


def test_unchanged_folders_are_not_listed_again(tmp_path: Path, scans: list[str]) -> None:
    write(tmp_path / "a" / "b" / "AGENTS.md")
    write(tmp_path / "c" / "AGENTS.md")
    (tmp_path / "d").mkdir()
    settle(tmp_path)
    scans.clear()
    assert found(tmp_path) == ["c/AGENTS.md", "a/b/AGENTS.md"]
    assert len(scans) == 5  # the root, a, a/b, c, d

    scans.clear()
    assert found(tmp_path) == ["c/AGENTS.md", "a/b/AGENTS.md"]
    assert scans == []

    write(tmp_path / "d" / "e" / "AGENTS.md")  # d changed; e is new
    assert found(tmp_path) == ["c/AGENTS.md", "a/b/AGENTS.md", "d/e/AGENTS.md"]
    assert scans == ["d", "e"]


def test_files_added_removed_and_folders_renamed_are_seen(tmp_path: Path) -> None:
    write(tmp_path / "a" / "AGENTS.md")
    write(tmp_path / "b" / "c" / "AGENTS.md")
    settle(tmp_path)
    assert found(tmp_path) == ["a/AGENTS.md", "b/c/AGENTS.md"]
    (tmp_path / "a" / "AGENTS.md").unlink()
    assert found(tmp_path) == ["b/c/AGENTS.md"]
    (tmp_path / "b").rename(tmp_path / "z")
    assert found(tmp_path) == ["z/c/AGENTS.md"]


def test_an_ignore_file_edited_in_place_is_seen(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", "build-output/\n")
    write(tmp_path / "vendor" / "AGENTS.md")
    settle(tmp_path)
    assert found(tmp_path) == ["vendor/AGENTS.md"]
    write(tmp_path / ".gitignore", "vendor/\n")  # the root folder's mtime does not move
    os.utime(tmp_path, (PAST, PAST))
    assert found(tmp_path) == []


def test_a_new_ignore_file_hides_folders_further_down(tmp_path: Path) -> None:
    write(tmp_path / "a" / "x" / "deep" / "AGENTS.md")
    settle(tmp_path)
    assert found(tmp_path) == ["a/x/deep/AGENTS.md"]
    write(tmp_path / "a" / ".gitignore", "deep/\n")  # a changed; a/x did not
    assert found(tmp_path) == []


def test_the_deny_list_decides_too(tmp_path: Path) -> None:
    write(tmp_path / "secret" / "AGENTS.md")
    settle(tmp_path)
    assert found(tmp_path) == ["secret/AGENTS.md"]
    denying = Workspace([tmp_path], deny=[*Workspace([tmp_path]).deny, "secret/"])
    assert found(tmp_path, denying) == []
    assert found(tmp_path) == ["secret/AGENTS.md"]


def test_a_folder_changed_just_before_a_walk_is_listed_again(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    assert found(tmp_path) == []
    # A second change within the timestamp granularity leaves the mtime where it was.
    recorded = os.stat(tmp_path / "a").st_mtime_ns
    write(tmp_path / "a" / "AGENTS.md")
    os.utime(tmp_path / "a", ns=(recorded, recorded))
    assert found(tmp_path) == ["a/AGENTS.md"]


def test_the_walk_is_kept_on_disk_where_agentls_exists(tmp_path: Path,
                                                        scans: list[str]) -> None:
    write(tmp_path / "a" / "AGENTS.md")
    (tmp_path / ".agentls").mkdir()
    settle(tmp_path)
    scans.clear()
    assert found(tmp_path) == ["a/AGENTS.md"]
    stored = tmp_path / nested_agents.STORE
    assert stored.is_file()

    nested_agents.forget()  # as a new process would start
    scans.clear()
    assert found(tmp_path) == ["a/AGENTS.md"]
    assert scans == []

    stored.write_text("{not json")  # damaged: walked again, and kept again
    nested_agents.forget()
    assert found(tmp_path) == ["a/AGENTS.md"]
    assert scans == [tmp_path.name, "a"]  # .agentls is never entered
    assert '"format":1' in stored.read_text()


def test_nothing_is_created_without_agentls(tmp_path: Path) -> None:
    write(tmp_path / "a" / "AGENTS.md")
    assert found(tmp_path) == ["a/AGENTS.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]


FOLDERS = ["a", "a/b", "a/b/c", "d", "d/e", "vendor", "a/vendor"]
Step = tuple[str, str]  # (what, folder)
steps = st.lists(st.tuples(
    st.sampled_from(["agents", "no-agents", "mkdir", "rmtree", "ignore-vendor", "ignore-b",
                     "no-ignore"]),
    st.sampled_from(["", *FOLDERS])), min_size=1, max_size=12)


def _apply(root: Path, what: str, folder: str) -> None:
    where = root / folder
    if what == "rmtree":
        if folder and where.is_dir():
            shutil.rmtree(where)
        return
    if what == "mkdir":
        where.mkdir(parents=True, exist_ok=True)
        return
    if not where.is_dir():
        return
    if what == "agents":
        (where / "AGENTS.md").write_text("rules\n")
    elif what == "no-agents":
        (where / "AGENTS.md").unlink(missing_ok=True)
    elif what.startswith("ignore-"):
        (where / ".gitignore").write_text(what.removeprefix("ignore-") + "/\n")
    elif what == "no-ignore":
        (where / ".gitignore").unlink(missing_ok=True)


def _folders(root: Path) -> dict[str, int]:
    return {folder: os.stat(folder).st_mtime_ns for folder, _, _ in os.walk(root)}


@settings(max_examples=100, deadline=None)
@given(steps)
def test_the_same_answer_as_a_full_walk_after_any_changes(changes: list[Step]) -> None:
    """After each change, time passes: folders that changed get an mtime of their own, in
    the past (so the kept walk is trusted for the others); a .gitignore rewritten in place
    leaves its folder's mtime alone, as on a real disk."""
    nested_agents.forget()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder).resolve()
        for start in FOLDERS:
            write(root / start / "AGENTS.md")
        settle(root)
        found(root)
        for step, (what, where) in enumerate(changes, start=1):
            before = _folders(root)
            _apply(root, what, where)
            moment = PAST + step * 10
            for path, mtime in _folders(root).items():
                if before.get(path) != mtime:
                    os.utime(path, (moment, moment))
            ws = Workspace([root])
            with ws.listing():
                full, _, _ = nested_agents._walk(ws, str(root), None)
            assert found(root) == sorted(full, key=lambda p: (p.count("/"), p)), changes[:step]
