"""Project facts kept across restarts (.agentls/cache/facts.json): reused while git HEAD,
the index, key files and the listed folders' mtimes say nothing changed."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from agentls.engine.prompt import facts_store
from agentls.engine.prompt import levels as context
from agentls.engine.prompt.levels import ProjectFacts
from agentls.engine.prompt.levels_cache import ProjectContextCache
from agentls.workspace.fence import Workspace


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.email=t@example.com", "-c",
                    "user.name=t", *args], check=True, capture_output=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "init")
    (tmp_path / ".agentls").mkdir()  # as a first run leaves it
    return tmp_path


async def stored(root: Path) -> ProjectFacts:
    facts = await context.build_project_facts(Workspace([root]))
    assert facts_store.save(Workspace([root]), facts)
    return facts


async def test_stored_facts_come_back_unchanged(project: Path) -> None:
    facts = await stored(project)
    again = facts_store.load(Workspace([project]))
    assert again is not None
    assert again.render() == facts.render() and "app.py" in again.render()
    assert again.included_files() == facts.included_files()
    assert again.roots[0].git is not None and again.roots[0].git == facts.roots[0].git


async def test_nothing_is_stored_where_agentls_does_not_exist(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("")
    facts = await context.build_project_facts(Workspace([tmp_path]))
    assert not facts_store.save(Workspace([tmp_path]), facts)
    assert not (tmp_path / ".agentls").exists()


async def test_a_new_file_in_a_listed_folder_makes_them_stale(project: Path) -> None:
    await stored(project)
    folder = project / "src"
    (folder / "new.py").write_text("")
    stat = folder.stat()  # a coarse clock may not move the mtime by itself: move it
    os.utime(folder, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert facts_store.load(Workspace([project])) is None


async def test_a_commit_or_an_edited_key_file_makes_them_stale(project: Path) -> None:
    await stored(project)
    (project / "src" / "app.py").write_text("x = 2\n")
    git(project, "commit", "-qam", "two")
    assert facts_store.load(Workspace([project])) is None
    await stored(project)
    with (project / "pyproject.toml").open("a") as out:
        out.write("# more\n")
    assert facts_store.load(Workspace([project])) is None


async def test_another_deny_list_makes_them_stale(project: Path) -> None:
    await stored(project)
    assert facts_store.load(Workspace([project], deny=("*.toml",))) is None


async def test_a_damaged_store_is_ignored(project: Path) -> None:
    await stored(project)
    facts_store.store_path(Workspace([project])).write_text("{not json")
    assert facts_store.load(Workspace([project])) is None


async def test_a_new_process_reuses_them_without_walking_the_tree(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = await ProjectContextCache().refresh(Workspace([project]))
    for _ in range(100):  # stored in the background
        if facts_store.store_path(Workspace([project])).is_file():
            break
        await asyncio.sleep(0.01)

    async def no_walk(workspace: Workspace) -> ProjectFacts:
        raise AssertionError("the facts were gathered again")

    monkeypatch.setattr(context, "build_project_facts", no_walk)
    facts, _ = await ProjectContextCache().get(Workspace([project]))
    assert facts.render() == first.render()
