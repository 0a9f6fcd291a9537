"""A run through an agent CLI: engine events, and the files it changed read from git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests.unit.llm import standin_agent_cli as standins

from agentls.engine.events import (
    DoneEvent,
    EditEvent,
    ErrorEvent,
    FileChangeInfo,
    RecordingFrontend,
    StatusEvent,
    ToolCallStarted,
    ToolResultEvent,
)
from agentls.engine.external import (
    changed_files,
    external_backend,
    git_snapshot,
    run_external,
    secret_env_names,
)
from agentls.llm.messages import Usage
from agentls.settings.config import BackendConfig, Settings


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "README.md").write_text("# calc\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "init")
    return root


def env_with(bin_dir: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


async def test_codex_run_reports_events_and_the_files_it_changed(
        tmp_path: Path, repo: Path) -> None:
    bin_dir = standins.install_standins(tmp_path / "bin", {"codex": "ok"})
    (repo / "README.md").write_text("# calc\nlocal notes\n")  # dirty before: not the CLI's
    front = RecordingFrontend()
    result = await run_external(BackendConfig(type="codex"), "codex", "fix add", repo, front,
                                env=env_with(bin_dir))

    assert result.stop_reason == "done" and result.error_kind is None
    assert result.text.endswith("DONE")
    assert result.usage == Usage(24763, 122, 24885)
    assert sorted(result.files, key=lambda f: f.path) == [
        FileChangeInfo("NOTES.md", "create", 2, 0),
        FileChangeInfo("calc.py", "update", 1, 1),
    ]
    assert "wrote these changes itself" in result.changes_note
    assert "not from a ChangeSet" in result.changes_note

    kinds = [e.kind for e in front.events]
    assert kinds[0] == "status" and kinds[-1] == "done"
    assert front.text() == result.text
    assert any(isinstance(e, ToolCallStarted) and e.name == "shell" for e in front.events)
    assert any(isinstance(e, ToolResultEvent) and e.name == "edit" for e in front.events)
    [edit] = [e for e in front.events if isinstance(e, EditEvent)]
    assert {f.path for f in edit.files} == {"NOTES.md", "calc.py"}
    assert edit.summary == result.changes_note
    assert isinstance(front.events[-1], DoneEvent) and front.events[-1].stop_reason == "done"


async def test_failed_run_ends_with_an_error_event_and_a_hint(
        tmp_path: Path, repo: Path) -> None:
    bin_dir = standins.install_standins(tmp_path / "bin", {"claude": "unauthenticated"})
    front = RecordingFrontend()
    result = await run_external(BackendConfig(type="claude"), "claude", "fix add", repo, front,
                                env=env_with(bin_dir))
    assert (result.stop_reason, result.error_kind) == ("error", "auth")
    assert result.files == []
    [error] = [e for e in front.events if isinstance(e, ErrorEvent)]
    assert error.error_kind == "auth" and "/login" in error.hint
    assert error.message == "Claude Code: Invalid API key · Please run /login"


async def test_outside_git_the_changes_cannot_be_listed_and_it_says_so(tmp_path: Path) -> None:
    bin_dir = standins.install_standins(tmp_path / "bin", {"copilot": "ok"})
    folder = tmp_path / "plain"
    folder.mkdir()
    front = RecordingFrontend()
    result = await run_external(
        BackendConfig(type="copilot"), "copilot", "notes", folder, front,
        env={**env_with(bin_dir), "COPILOT_GITHUB_TOKEN": "github_pat_x",
             "GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert result.stop_reason == "done" and not result.git_tracked
    assert (folder / "NOTES.md").exists() and result.files == []
    statuses = [e.message for e in front.events if isinstance(e, StatusEvent)]
    assert any("not in a git repository" in m for m in statuses)


async def test_changes_include_commits_deletions_and_reverts(repo: Path) -> None:
    (repo / "README.md").write_text("# calc\nwip\n")
    before = await git_snapshot(repo)
    # What a CLI might do: commit a fix, delete a file, revert a dirty one, add a binary.
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "commit", "-qam", "fix")  # commits README.md's wip too
    (repo / "README.md").unlink()
    (repo / "logo.bin").write_bytes(b"\x00\x01\x02")
    files = {f.path: f for f in await changed_files(repo, before)}
    assert files["calc.py"] == FileChangeInfo("calc.py", "update", 1, 1)
    assert files["README.md"] == FileChangeInfo("README.md", "delete", 0, 2)
    assert files["logo.bin"] == FileChangeInfo("logo.bin", "create", 0, 0)
    assert len(files) == 3


async def test_paths_are_shown_relative_to_the_run_folder(repo: Path) -> None:
    sub = repo / "pkg"
    sub.mkdir()
    before = await git_snapshot(sub)
    (sub / "mod.py").write_text("x = 1\n")
    (repo / "calc.py").write_text("pass\n")
    paths = sorted(f.path for f in await changed_files(sub, before))
    assert paths == ["../calc.py", "mod.py"]


def test_external_backend_resolution() -> None:
    settings = Settings(backends={"mine": BackendConfig(type="codex", model="gpt-5-codex"),
                                  "local": BackendConfig(api_key_env="LOCAL_KEY")},
                        backend="local")
    assert external_backend(settings, "mine") == settings.backends["mine"]
    assert external_backend(settings, "local") is None
    claude = external_backend(settings, "claude")
    assert claude is not None and claude.type == "claude"
    assert "model" not in claude.model_fields_set  # the CLI keeps its own default model
    assert external_backend(settings, "nope") is None
    assert secret_env_names(settings) == {"OPENAI_API_KEY", "LOCAL_KEY"}
