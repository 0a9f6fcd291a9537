"""Nested AGENTS.md files and the CLAUDE.md / copilot-instructions fallback (level 2)."""

from __future__ import annotations

from pathlib import Path

from agentls.engine.prompt import instructions as module
from agentls.engine.prompt.instructions import load_instructions
from agentls.workspace.fence import Workspace


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_nested_agents_files_come_after_the_root_with_their_scope(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "Root rules.\n")
    write(tmp_path / "src" / "api" / "AGENTS.md", "API rules.\n")
    write(tmp_path / "src" / "AGENTS.md", "Source rules.\n")
    loaded = load_instructions(Workspace([tmp_path]))
    assert [f.path for f in loaded.files] == ["AGENTS.md", "src/AGENTS.md",
                                              "src/api/AGENTS.md"]
    text = loaded.render()
    assert "## src/api/AGENTS.md (applies to files under src/api/;" in text
    assert "it wins" in text
    assert text.index("Root rules.") < text.index("Source rules.") < text.index("API rules.")


def test_ignored_and_noise_folders_are_not_searched(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", "vendor/\n")
    write(tmp_path / "vendor" / "AGENTS.md", "someone else's rules\n")
    write(tmp_path / "node_modules" / "pkg" / "AGENTS.md", "a dependency's rules\n")
    assert load_instructions(Workspace([tmp_path])).files == ()


def test_claude_md_and_copilot_instructions_are_the_fallback(tmp_path: Path) -> None:
    write(tmp_path / "CLAUDE.md", "Claude rules.\n")
    write(tmp_path / ".github" / "copilot-instructions.md", "Copilot rules.\n")
    loaded = load_instructions(Workspace([tmp_path]))
    assert [f.path for f in loaded.files] == ["CLAUDE.md", ".github/copilot-instructions.md"]
    assert loaded.summary() == "instructions: CLAUDE.md, .github/copilot-instructions.md"


def test_an_agents_md_replaces_the_fallback(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "The rules.\n")
    write(tmp_path / "CLAUDE.md", "Not read.\n")
    assert [f.path for f in load_instructions(Workspace([tmp_path])).files] == ["AGENTS.md"]


def test_nested_files_beyond_the_total_cap_are_named(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(module, "INSTRUCTIONS_TOTAL_CAP_BYTES", 30)
    write(tmp_path / "AGENTS.md", "Root rules, twenty bytes\n")
    write(tmp_path / "a" / "AGENTS.md", "A long set of rules for a.\n")
    loaded = load_instructions(Workspace([tmp_path]))
    assert [f.path for f in loaded.files] == ["AGENTS.md"]
    assert loaded.not_included == ("a/AGENTS.md",)
    assert "Read the one closest to a file (read_file)" in loaded.render()
    assert "a/AGENTS.md (too much in all" in loaded.summary()


def test_summary_without_any_file_says_none(tmp_path: Path) -> None:
    assert load_instructions(Workspace([tmp_path])).summary().startswith("instructions: none")


def test_linked_and_denied_folders_are_not_searched_and_deep_ones_are(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / "a" / "b" / "c" / "AGENTS.md", "Deep rules.\n")
    write(project / "z" / "AGENTS.md", "Z rules.\n")
    write(tmp_path / "elsewhere" / "AGENTS.md", "Not this project's rules.\n")
    (project / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    write(project / ".agentls" / "AGENTS.md", "Tool state, denied.\n")
    loaded = load_instructions(Workspace([project]))
    assert [f.path for f in loaded.files] == ["z/AGENTS.md", "a/b/c/AGENTS.md"]
