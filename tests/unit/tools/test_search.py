"""Tests for server/agentls/tools/search/text.py: real `rg` and the pure-Python fallback."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest

from agentls.tools.search import text as search_module
from agentls.tools.search.ripgrep import find_rg, rg_command
from agentls.tools.search.state import COUNT_LIMIT, LINE_TEXT_LIMIT, MAX_RESULTS_LIMIT
from agentls.tools.search.text import search_text
from agentls.workspace.fence import Workspace

ENGINES = ["rg", "python"]


def write(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A sample tree with names that sort trickily and everything the fence must hide."""
    root = tmp_path / "project"
    root.mkdir()
    write(root, "B.txt", "needle upper-case file name\n")
    write(root, "a.txt", "first line\nneedle in a.txt\nNEEDLE shouting\n")
    write(root, "a/b.txt", "needle under a/\n")
    write(root, "a-b.txt", "needle with dash\n")
    write(root, "a.b/c.txt", "needle under a.b/\n")
    write(root, "src/app.py", "def needle():\n    return 'needle needle'\n\nneedle = 1\n")
    write(root, "src/util.py", "import os\n# no match here\n")
    write(root, "src/deep/er/mod.py", "x = 'needle'\n")
    write(root, "docs/unicode.md", "héllo wörld needle ✓\n日本語 needle\n")
    write(root, "docs/crlf.txt", "needle one\r\nneedle two\r\n")
    write(root, "docs/bom.txt", "\ufeffneedle after bom\n")
    write(root, "docs/long.txt", "x" * 1000 + " needle " + "y" * 1000 + "\n")
    write(root, ".github/ci.yml", "run: needle\n")
    write(root, "bin/data.bin", b"needle\x00\x01\x02binary")
    # Hidden by the fence: .gitignore (nested, with negation), .agentlsignore, the deny list.
    write(root, ".gitignore", "build/\n*.log\n")
    write(root, "build/out.js", "needle in build output\n")
    write(root, "debug.log", "needle in a log\n")
    write(root, "logs/.gitignore", "!keep.log\n")
    write(root, "logs/keep.log", "needle kept by negation\n")
    write(root, "logs/drop.log", "needle dropped\n")
    write(root, ".agentlsignore", "private/\n")
    write(root, "private/notes.md", "needle private\n")
    write(root, ".env", "TOKEN=needle\n")
    write(root, ".env.local", "needle=1\n")
    write(root, "certs/server.pem", "needle pem\n")
    write(root, "keys/id_rsa_backup", "needle key\n")
    write(root, ".git/config", "[core] needle\n")
    write(root, ".agentls/state.txt", "needle state\n")
    # Symlinks are not followed (as rg does by default), inside or outside.
    outside = write(tmp_path, "outside/secret.txt", "needle outside\n")
    (root / "link_out").symlink_to(outside.parent)
    (root / "link_in.txt").symlink_to(root / "a.txt")
    return root


async def both(ws: Workspace, query: str, **options: Any) -> dict[str, Any]:
    """Run both engines and require identical results."""
    by_rg = await search_text(ws, query, engine="rg", **options)
    by_python = await search_text(ws, query, engine="python", **options)
    assert by_rg == by_python
    return by_rg


def paths(result: dict[str, Any]) -> list[str]:
    return [match.split(":", 1)[0] for match in result["matches"]]


def test_rg_of_the_ripgrep_wheel_is_found() -> None:
    rg = find_rg()
    assert rg is not None and os.access(rg, os.X_OK)


async def test_results_are_sorted_like_rg_and_the_fence_holds(tree: Path) -> None:
    result = await both(Workspace([tree]), "needle", max_results=100)
    assert result["ok"] is True
    assert result["truncated"] is False
    assert result["matches"][:6] == [
        ".github/ci.yml:1:6: run: needle",
        "B.txt:1:1: needle upper-case file name",
        "a/b.txt:1:1: needle under a/",  # rg sorts by path components: a/ before a-b.txt
        "a-b.txt:1:1: needle with dash",
        "a.b/c.txt:1:1: needle under a.b/",
        "a.txt:2:1: needle in a.txt",
    ]
    shown = set(paths(result))
    assert "logs/keep.log" in shown
    hidden = {"build/out.js", "debug.log", "logs/drop.log", "private/notes.md", ".env",
              ".env.local", "certs/server.pem", "keys/id_rsa_backup", ".git/config",
              ".agentls/state.txt", "bin/data.bin", "link_in.txt", "link_out/secret.txt"}
    assert not shown & hidden
    assert result["count"] == result["total_seen"] == len(result["matches"])


async def test_each_matching_line_once_with_the_first_column(tree: Path) -> None:
    result = await both(Workspace([tree]), "needle", path="src/app.py")
    assert result["matches"] == [
        "src/app.py:1:5: def needle():",
        "src/app.py:2:13:     return 'needle needle'",
        "src/app.py:4:1: needle = 1",
    ]


async def test_columns_count_characters_not_bytes(tree: Path) -> None:
    result = await both(Workspace([tree]), "needle", path="docs/unicode.md")
    assert result["matches"] == [
        "docs/unicode.md:1:13: héllo wörld needle ✓",
        "docs/unicode.md:2:5: 日本語 needle",
    ]


async def test_line_endings_and_byte_order_mark(tree: Path) -> None:
    result = await both(Workspace([tree]), "needle", path="docs", glob="*.txt")
    assert "docs/crlf.txt:1:1: needle one" in result["matches"]
    assert "docs/crlf.txt:2:1: needle two" in result["matches"]
    assert "docs/bom.txt:1:1: needle after bom" in result["matches"]


async def test_long_lines_are_cut_around_the_match(tree: Path) -> None:
    result = await both(Workspace([tree]), "needle", path="docs/long.txt")
    (match,) = result["matches"]
    text = match.split(": ", 1)[1]
    assert "needle" in text
    assert len(text) <= LINE_TEXT_LIMIT + 2
    assert text.startswith("…") and text.endswith("…")
    assert match.startswith("docs/long.txt:1:1002:")


@pytest.mark.parametrize(
    ("query", "options", "expected"),
    [
        ("NEEDLE", {"case_sensitive": True}, ["a.txt:3:1: NEEDLE shouting"]),
        ("needle", {"case_sensitive": True, "path": "a.txt"}, ["a.txt:2:1: needle in a.txt"]),
        (r"ne+dle\s+(in|shouting)", {"regex": True, "path": "a.txt"},
         ["a.txt:2:1: needle in a.txt", "a.txt:3:1: NEEDLE shouting"]),
        ("needle (", {"path": "a.txt"}, []),  # literal by default: no regex error
        ("a.txt", {"path": "a.txt"}, ["a.txt:2:11: needle in a.txt"]),
    ],
)
async def test_literal_regex_and_case(
    tree: Path, query: str, options: dict[str, Any], expected: list[str]
) -> None:
    result = await both(Workspace([tree]), query, **options)
    assert result["matches"] == expected


@pytest.mark.parametrize(
    ("glob", "expected"),
    [
        ("*.py", {"src/app.py", "src/deep/er/mod.py"}),
        ("src/*.py", {"src/app.py"}),
        ("src/**", {"src/app.py", "src/deep/er/mod.py"}),
        ("!*.txt", {".github/ci.yml", "docs/unicode.md", "logs/keep.log", "src/app.py",
                    "src/deep/er/mod.py"}),
    ],
)
async def test_glob(tree: Path, glob: str, expected: set[str]) -> None:
    result = await both(Workspace([tree]), "needle", glob=glob, max_results=100)
    assert set(paths(result)) == expected


async def test_truncation_reports_what_was_seen(tree: Path) -> None:
    result = await both(Workspace([tree]), "needle", max_results=3)
    assert result["count"] == 3
    assert result["truncated"] is True
    assert result["total_seen"] > 3
    assert "first 3" in result["message"]


async def test_counting_stops_at_the_count_limit(tmp_path: Path) -> None:
    for i in range(100):
        write(tmp_path, f"f{i:02}.txt", "word\n" * 20)
    result = await both(Workspace([tmp_path]), "word", max_results=10)
    assert result["count"] == 10
    assert result["total_seen"] == COUNT_LIMIT
    assert f"at least {COUNT_LIMIT}" in result["message"]
    assert result["matches"][-1].startswith("f00.txt:10:")


async def test_per_file_cap_makes_the_total_a_lower_bound(tmp_path: Path) -> None:
    write(tmp_path, "many.txt", "word\n" * 100)
    write(tmp_path, "one.txt", "word\n")
    result = await both(Workspace([tmp_path]), "word", max_results=10)
    assert result["total_seen"] == 12  # rg reads at most max_results + 1 lines per file
    assert "at least 12" in result["message"]


@pytest.mark.parametrize(("given", "used"), [(0, 1), (-4, 1), (10_000, MAX_RESULTS_LIMIT)])
async def test_max_results_is_clamped(tree: Path, given: int, used: int) -> None:
    result = await both(Workspace([tree]), "needle", max_results=given)
    assert result["count"] == min(used, result["total_seen"])


async def test_no_match_message(tree: Path) -> None:
    result = await both(Workspace([tree]), "absent-word")
    assert result["ok"] is True
    assert result["matches"] == [] and result["truncated"] is False
    assert "No matches" in result["message"]


@pytest.mark.parametrize(
    ("path", "code"),
    [("..", "OUTSIDE_WORKSPACE"), ("/etc", "OUTSIDE_WORKSPACE"), (".git", "DENIED"),
     ("build", "IGNORED"), ("private/notes.md", "IGNORED"), ("nowhere", "NOT_FOUND")],
)
@pytest.mark.parametrize("engine", ENGINES)
async def test_path_goes_through_the_fence(
    tree: Path, path: str, code: str, engine: search_module.Engine
) -> None:
    result = await search_text(Workspace([tree]), "needle", path=path, engine=engine)
    assert result["ok"] is False
    assert result["error"] == code


@pytest.mark.parametrize("engine", ENGINES)
async def test_invalid_regex_is_explained(tree: Path, engine: search_module.Engine) -> None:
    result = await search_text(Workspace([tree]), "needle(", regex=True, engine=engine)
    assert result["ok"] is False
    assert result["error"] == "INVALID_REGEX"
    assert "needle(" in result["message"] and "regex=false" in result["message"]


async def test_invalid_regex_message_comes_from_rg(tree: Path) -> None:
    result = await search_text(Workspace([tree]), "a[", regex=True, engine="rg")
    assert "unclosed character class" in result["message"]


@pytest.mark.parametrize(("query", "code"), [("", "EMPTY_QUERY"), ("a\nb", "MULTILINE_QUERY")])
async def test_unusable_queries(tree: Path, query: str, code: str) -> None:
    result = await search_text(Workspace([tree]), query)
    assert result["error"] == code


async def test_agentlsignore_can_show_git_ignored_files(tree: Path) -> None:
    write(tree, ".agentlsignore", "private/\n!build/\n")
    result = await both(Workspace([tree]), "needle", max_results=100)
    assert "build/out.js" in paths(result)
    assert "private/notes.md" not in paths(result)


async def test_subfolder_search_applies_the_root_gitignore(tree: Path) -> None:
    write(tree, "src/build/gen.py", "needle generated\n")
    write(tree, ".gitignore", "build/\n*.log\nsrc/deep/\n")
    result = await both(Workspace([tree]), "needle", path="src")
    assert paths(result) == ["src/app.py", "src/app.py", "src/app.py"]


async def test_configured_deny_list_with_a_negation(tree: Path) -> None:
    ws = Workspace([tree], deny=(".git/", ".env*", "!.env.local"))
    result = await both(ws, "needle", max_results=100)
    shown = set(paths(result))
    assert ".env.local" in shown and ".env" not in shown
    assert "certs/server.pem" in shown  # no longer denied


async def test_deny_list_is_case_insensitive(tree: Path) -> None:
    write(tree, "CERT.PEM", "needle\n")
    write(tree, ".ENV", "needle\n")
    result = await both(Workspace([tree]), "needle", max_results=100)
    assert not {"CERT.PEM", ".ENV"} & set(paths(result))


async def test_pending_changes_are_searched_instead_of_disk(tree: Path) -> None:
    ws = Workspace([tree])
    ws.stage_write(ws.resolve("a.txt"), "no match any more\n")
    ws.stage_write(ws.resolve("src/new.py"), "\n\nneedle = 'created'\n")
    ws.stage_write(ws.resolve("src/util.py"), "needle added\n")
    ws.stage_delete(ws.resolve("B.txt"))
    result = await both(ws, "needle", max_results=100)
    shown = paths(result)
    assert "a.txt" not in shown and "B.txt" not in shown
    assert "src/new.py:3:1: needle = 'created'" in result["matches"]
    assert "src/util.py:1:1: needle added" in result["matches"]
    # Merged in path order.
    assert shown == sorted(shown, key=lambda p: p.split("/"))


async def test_pending_hits_that_sort_first_survive_truncation(tree: Path) -> None:
    ws = Workspace([tree])
    ws.stage_write(ws.resolve("0first.txt"), "needle pending\n")
    result = await both(ws, "needle", max_results=2)
    assert result["matches"] == [
        ".github/ci.yml:1:6: run: needle",
        "0first.txt:1:1: needle pending",
    ]
    assert result["truncated"] is True


async def test_pending_file_as_the_search_path(tree: Path) -> None:
    ws = Workspace([tree])
    ws.stage_write(ws.resolve("notes/todo.md"), "a needle\n")
    result = await both(ws, "needle", path="notes/todo.md")
    assert result["matches"] == ["notes/todo.md:1:3: a needle"]


async def test_open_editor_buffers_replace_disk_text(tree: Path) -> None:
    ws = Workspace([tree])
    ws.open_document(tree / "a-b.txt", "unsaved\nunsaved needle\n", 3)
    result = await both(ws, "needle", path="a-b.txt")
    assert result["matches"] == ["a-b.txt:2:9: unsaved needle"]


async def test_several_roots(tree: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write(other, "z.txt", "needle in other\n")
    ws = Workspace([tree, other])
    everything = await both(ws, "needle", max_results=200)
    assert everything["matches"][-1] == "other/z.txt:1:1: needle in other"
    assert everything["matches"][0].startswith("project/")
    only_other = await both(ws, "needle", path="other")
    assert only_other["matches"] == ["other/z.txt:1:1: needle in other"]


async def test_fallback_when_rg_is_missing_logs_once(
    tree: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    expected = await search_text(Workspace([tree]), "needle", engine="rg")
    monkeypatch.setattr(search_module, "find_rg", lambda: None)
    monkeypatch.setattr(search_module, "_fallback_warned", False)
    with caplog.at_level(logging.WARNING, logger="agentls.tools.search.text"):
        first = await search_text(Workspace([tree]), "needle")
        await search_text(Workspace([tree]), "needle")
    assert first == expected
    warnings = [r for r in caplog.records if "slower" in r.getMessage()]
    assert len(warnings) == 1
    forced = await search_text(Workspace([tree]), "needle", engine="rg")
    assert forced["error"] == "RG_NOT_FOUND"


def test_rg_command_carries_the_fence(tree: Path) -> None:
    argv, cwd = rg_command(Workspace([tree]), "needle", glob="*.py")
    assert cwd == tree.resolve()
    assert "--json" in argv and "--fixed-strings" in argv and "--ignore-case" in argv
    assert "--iglob=!.env" in argv and "--iglob=!.git/" in argv
    assert argv[argv.index("--glob") + 1] == "*.py"
    assert ["--ignore-file", str(tree.resolve() / ".agentlsignore")] == argv[
        argv.index("--ignore-file") : argv.index("--ignore-file") + 2
    ]
    assert argv[-3:] == ["needle", "--", "."]
