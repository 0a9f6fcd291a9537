"""Prompt levels (DESIGN.md decision 4): content, order, caps, dedup, and prefix stability."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from itertools import pairwise
from pathlib import Path

import pytest

from agentls.engine.prompt import facts
from agentls.engine.prompt import levels as context
from agentls.engine.prompt.levels import (
    BASE_SYSTEM_PROMPT,
    FILE_TOKEN_CAP,
    HEAD_LINES,
    INSTRUCTIONS_CAP_BYTES,
    KEY_FILE_CAP_BYTES,
    TREE_COUNT_LIMIT,
    TREE_LIMIT,
    Attachments,
    Diagnostic,
    ProjectFacts,
    Selection,
    SessionContext,
    build_project_facts,
    build_request_messages,
    load_instructions,
    prefix_stability,
    render_turn,
    system_messages,
)
from agentls.llm.messages import Message, ToolCall
from agentls.workspace.fence import FenceError, Workspace

TOOLS = ("list_files", "read_file", "search_text", "write_file", "edit_file", "apply_patch",
         "delete_file", "shell_exec", "git_status", "git_diff", "git_log", "ask_user")


def tokens(text: str) -> int:
    return max(1, len(text) // 4)


def write(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ann", "GIT_AUTHOR_EMAIL": "ann@example.com",
    "GIT_COMMITTER_NAME": "Ann", "GIT_COMMITTER_EMAIL": "ann@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True, env={**os.environ, **GIT_ENV})
    return done.stdout


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write(root / "AGENTS.md", "Use tabs.\nRun `make test`.\n")
    write(root / ".agentls" / "instructions.md", "Answer in French.\n")
    write(root / "pyproject.toml", '[project]\nname = "demo"\n')
    write(root / "package.json", json.dumps({
        "name": "demo-web", "version": "1.2.3", "private": True,
        "scripts": {"test": "vitest"}, "dependencies": {"react": "^18.0.0"},
        "devDependencies": {"vitest": "^1.0.0"}, "author": "Ann <ann@example.com>",
    }, indent=2))
    write(root / "tsconfig.json", '{"compilerOptions": {"strict": true}}\n')
    write(root / "Dockerfile", "FROM python:3.11\nCMD [\"make\"]\n")
    write(root / ".env.example", "# the database\nDATABASE_URL=postgres://u:hunter2@db\n"
                                 "export API_TOKEN=sk-live-123\n")
    write(root / ".env", "API_TOKEN=real-secret\n")
    write(root / ".gitignore", "build/\n*.log\n")
    write(root / "build" / "out.js")
    write(root / "app.log")
    write(root / "node_modules" / "react" / "index.js")
    write(root / "src" / "app.py", "import os\n\n\ndef main():\n    return os.name\n")
    write(root / "src" / "pkg" / "deep" / "deeper.py")
    return root


@pytest.fixture
def ws(project: Path) -> Workspace:
    return Workspace([project])


async def system_text(ws: Workspace) -> str:
    facts = await build_project_facts(ws)
    (message,) = system_messages(facts, load_instructions(ws))
    assert message.role == "system"
    assert message.content is not None
    return message.content


# --- levels 1-3 -----------------------------------------------------------------------------------


async def test_levels_one_to_three_make_one_system_message_in_order(ws: Workspace) -> None:
    text = await system_text(ws)
    base = text.index(BASE_SYSTEM_PROMPT[:60])
    agents = text.index("## AGENTS.md\nUse tabs.")
    own = text.index("## .agentls/instructions.md\nAnswer in French.")
    facts = text.index("# Project facts")
    assert base == 0 < agents < own < facts
    assert text.index("## Files") < text.index("## Key files") < text.index("## Git")


def test_base_prompt_names_the_tools_and_rules_but_no_schemas() -> None:
    for name in TOOLS:
        assert name in BASE_SYSTEM_PROMPT
    lowered = BASE_SYSTEM_PROMPT.lower()
    for rule in ("read before you edit", "prefer edit_file or apply_patch",
                 "nothing is saved before they accept", "never invent file contents",
                 "be concise", "end with what you changed", "run tests"):
        assert rule in lowered
    # Schemas travel in the request's `tools`, not in the prompt text.
    assert '"parameters"' not in BASE_SYSTEM_PROMPT and '"properties"' not in BASE_SYSTEM_PROMPT


async def test_system_messages_are_deterministic(ws: Workspace) -> None:
    assert await system_text(ws) == await system_text(ws)


async def test_without_facts_or_instructions_only_the_base_prompt() -> None:
    (message,) = system_messages(None, None)
    assert message.content == BASE_SYSTEM_PROMPT


# --- level 2 ----------------------------------------------------------------------------------


def test_instructions_are_read_although_the_fence_denies_agentls(ws: Workspace) -> None:
    with pytest.raises(FenceError) as refused:
        ws.resolve(".agentls/instructions.md")
    assert refused.value.code == "DENIED"
    paths = [f.path for f in load_instructions(ws).files]
    assert paths == ["AGENTS.md", ".agentls/instructions.md"]


def test_instructions_are_capped_at_32_kib_with_a_note(tmp_path: Path) -> None:
    line = "Always write tests. " * 5 + "\n"
    write(tmp_path / "AGENTS.md", line * (40 * 1024 // len(line)))
    instructions = load_instructions(Workspace([tmp_path]))
    (item,) = instructions.files
    assert item.cut
    assert len(item.text.encode()) <= INSTRUCTIONS_CAP_BYTES
    assert item.text.endswith("\n")  # cut at a line end
    rendered = instructions.render()
    assert f"[... cut: AGENTS.md is {item.size:,} bytes; only the first 32 KiB" in rendered
    assert instructions.included_files() == ()  # a cut file is not "already present"


def test_instructions_symlinked_outside_the_root_are_skipped(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    write(tmp_path / "elsewhere" / "AGENTS.md", "secret plans\n")
    write(tmp_path / "elsewhere" / "instructions.md", "more secret plans\n")
    (root / "AGENTS.md").symlink_to(tmp_path / "elsewhere" / "AGENTS.md")
    (root / ".agentls").symlink_to(tmp_path / "elsewhere")
    assert load_instructions(Workspace([root])).files == ()


def test_instructions_symlinked_inside_the_root_are_read_once(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "agents.md", "Be brief.\n")
    (tmp_path / "AGENTS.md").symlink_to(tmp_path / "docs" / "agents.md")
    (tmp_path / ".agentls").mkdir()
    (tmp_path / ".agentls" / "instructions.md").symlink_to(tmp_path / "docs" / "agents.md")
    (item,) = load_instructions(Workspace([tmp_path])).files
    assert item.text == "Be brief.\n"


def test_a_fifo_named_agents_md_is_skipped_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "AGENTS.md")
    assert load_instructions(Workspace([tmp_path])).files == ()


def test_instructions_of_every_root(tmp_path: Path) -> None:
    write(tmp_path / "app" / "AGENTS.md", "app rules\n")
    write(tmp_path / "lib" / "AGENTS.md", "lib rules\n")
    files = load_instructions(Workspace([tmp_path / "app", tmp_path / "lib"])).files
    assert [(f.path, f.text) for f in files] == [("app/AGENTS.md", "app rules\n"),
                                                 ("lib/AGENTS.md", "lib rules\n")]


# --- level 3: the tree --------------------------------------------------------------------------


async def test_tree_is_filtered_by_the_fence_and_noise_folders(ws: Workspace) -> None:
    (root,) = (await build_project_facts(ws)).roots
    lines = root.tree.lines
    assert "src/" in lines and "  app.py" in lines
    for hidden in ("build/", "app.log", ".env", ".env.example", ".agentls/", "node_modules/",
                   ".git/"):
        assert hidden not in lines


async def test_tree_stops_at_depth_three(ws: Workspace) -> None:
    (root,) = (await build_project_facts(ws)).roots
    assert "    deep/" in root.tree.lines  # src/pkg/deep/ is level 3
    assert not any("deeper.py" in line for line in root.tree.lines)
    assert root.tree.more == 0


async def test_tree_lists_200_entries_breadth_first_then_says_how_many_more(
    tmp_path: Path,
) -> None:
    for i in range(150):
        write(tmp_path / "many" / f"f{i:03}.txt")
    for i in range(100):
        write(tmp_path / "more" / f"g{i:03}.txt")
    write(tmp_path / "z_last.txt")
    (root,) = (await build_project_facts(Workspace([tmp_path]))).roots
    tree = root.tree
    assert len(tree.lines) == TREE_LIMIT
    assert tree.more == 253 - TREE_LIMIT
    # Every top-level entry is listed even though the limit cuts.
    assert {"many/", "more/", "z_last.txt"} <= set(tree.lines)
    assert tree.render().endswith(f"(... and {253 - TREE_LIMIT} more)")
    # Folders first, sorted by name; children under their folder.
    assert tree.lines[:2] == ("many/", "  f000.txt")


async def test_once_the_listing_is_full_the_rest_is_counted_up_to_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder, count in (("a", 300), ("b", 400), ("c", 300)):
        for i in range(count):
            write(tmp_path / folder / f"f{i:03}.txt")
    (bounded,) = (await build_project_facts(Workspace([tmp_path]))).roots
    monkeypatch.setattr(facts, "TREE_COUNT_LIMIT", 10_000)
    (counted,) = (await build_project_facts(Workspace([tmp_path]))).roots
    # The same 200 entries listed; 3 + 300 + 400 + 300 counted in all without the bound.
    assert bounded.tree.lines == counted.tree.lines and len(bounded.tree.lines) == TREE_LIMIT
    assert (counted.tree.more, counted.tree.more_is_lower_bound) == (1003 - TREE_LIMIT, False)
    # With it: a/ listed the 200th entry, then 500 more looked at (b/, and 100 of c/).
    assert TREE_COUNT_LIMIT == 500
    assert (bounded.tree.more, bounded.tree.more_is_lower_bound) == (803 - TREE_LIMIT, True)
    assert bounded.tree.render().endswith(f"(... and at least {803 - TREE_LIMIT} more)")


async def test_facts_render_the_tree_in_a_fenced_block(ws: Workspace) -> None:
    text = (await build_project_facts(ws)).render()
    assert "## Files (3 levels deep; ignored files left out)\n```text\n" in text
    assert f"Workspace root: {ws.roots[0]}" in text


# --- level 3: key files -------------------------------------------------------------------------


async def test_key_files_package_json_keeps_name_scripts_dependencies(ws: Workspace) -> None:
    (root,) = (await build_project_facts(ws)).roots
    files = {k.path: k for k in root.key_files}
    assert list(files) == ["pyproject.toml", "package.json", "tsconfig.json", "Dockerfile",
                           ".env.example"]
    package = files["package.json"]
    assert json.loads(package.body) == {"name": "demo-web", "scripts": {"test": "vitest"},
                                        "dependencies": {"react": "^18.0.0"}}
    assert not package.complete
    assert files["tsconfig.json"].complete
    assert files["Dockerfile"].language == "dockerfile"


async def test_env_example_gives_variable_names_only(ws: Workspace) -> None:
    text = await system_text(ws)
    assert "DATABASE_URL\nAPI_TOKEN" in text
    for secret in ("hunter2", "sk-live-123", "real-secret"):
        assert secret not in text


async def test_key_files_are_capped_with_a_note(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "".join(f"# line {i:04}\n" for i in range(1000)))
    (root,) = (await build_project_facts(Workspace([tmp_path]))).roots
    (key,) = root.key_files
    assert len(key.body.encode()) <= KEY_FILE_CAP_BYTES and key.body.endswith("\n")
    assert not key.complete
    assert key.title == "pyproject.toml (first 2 KiB of 12,000 bytes; read_file for the rest)"


async def test_key_files_the_fence_hides_are_not_read(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", "Dockerfile\n")
    write(tmp_path / "Dockerfile", "FROM secret\n")
    (root,) = (await build_project_facts(Workspace([tmp_path]))).roots
    assert root.key_files == ()


async def test_invalid_package_json_is_reported_not_fatal(tmp_path: Path) -> None:
    write(tmp_path / "package.json", "{ not json")
    (root,) = (await build_project_facts(Workspace([tmp_path]))).roots
    assert root.key_files[0].body.startswith("(not valid JSON")


# --- level 3: git -------------------------------------------------------------------------------


async def test_not_a_git_repository(ws: Workspace) -> None:
    text = await system_text(ws)
    assert "## Git\nNot a git repository." in text


async def test_git_branch_changes_and_last_five_commits(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    write(origin / "a.py", "a = 0\n")
    git(origin, "init", "-q", "-b", "main")
    for i in range(7):
        write(origin / "a.py", f"a = {i}\n")
        commit_all(origin, f"commit number {i}")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    write(clone / "a.py", "a = 'ahead'\n")
    commit_all(clone, "ahead of origin")
    write(clone / "a.py", "a = 'changed'\n")
    write(clone / "new.py")
    write(clone / ".env", "SECRET=1\n")  # the fence hides it from the changed files too

    text = await system_text(Workspace([clone]))
    git_part = text[text.index("## Git"):]
    assert "Branch: main" in git_part
    assert "Ahead of its upstream by 1, behind by 0." in git_part
    assert " M a.py\n?? new.py" in git_part and ".env" not in git_part
    subjects = [line.split(": ", 1)[1] for line in git_part.split("Last commits:\n")[1]
                .splitlines() if ": " in line]
    assert subjects == ["ahead of origin", "commit number 6", "commit number 5",
                        "commit number 4", "commit number 3"]


async def test_multi_root_facts_name_each_root(tmp_path: Path) -> None:
    write(tmp_path / "app" / "main.py")
    write(tmp_path / "lib" / "util.py")
    text = (await build_project_facts(Workspace([tmp_path / "app", tmp_path / "lib"]))).render()
    assert "Workspace roots: app (" in text and "Write paths as '<root name>/<path>'" in text
    assert text.index("## Root app") < text.index("main.py") < text.index("## Root lib")


# --- computed once per session ------------------------------------------------------------------


async def test_session_context_gathers_facts_once_and_keeps_the_text(
    ws: Workspace, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    real = context.build_project_facts

    async def counting(workspace: Workspace) -> ProjectFacts:
        calls.append(workspace)
        return await real(workspace)

    monkeypatch.setattr(context, "build_project_facts", counting)
    session = SessionContext(ws)
    first, again = await asyncio.gather(session.system_messages(), session.system_messages())
    write(project / "src" / "added_later.py")
    write(project / "AGENTS.md", "Different rules now.\n")
    later = await session.system_messages()
    await session.render_turn("hi", Attachments(files=["src/app.py"]), tokens)
    assert len(calls) == 1
    assert first == again == later
    assert "added_later" not in (later[0].content or "")
    assert "Use tabs." in (later[0].content or "")


# --- level 4 ------------------------------------------------------------------------------------


def test_a_turn_without_attachments_is_the_prompt_itself(ws: Workspace) -> None:
    turn = render_turn("Fix the bug.", Attachments(), ws, None, tokens)
    assert turn.message == Message.user("Fix the bug.")
    assert render_turn("Fix it.", None, ws, None, tokens).message.content == "Fix it."


def test_attachments_come_before_the_request_in_the_user_message(ws: Workspace) -> None:
    attachments = Attachments(
        selection=Selection("src/app.py", 4, 5, "def main():\n    return os.name\n"),
        files=["Dockerfile"],
        diagnostics=[Diagnostic("src/app.py", 5, "Name 'os' is not defined", source="pyright")],
    )
    turn = render_turn("Why does it fail?", attachments, ws, None, tokens)
    text = turn.message.content or ""
    assert turn.message.role == "user"
    order = [text.index(s) for s in ("## Selection: src/app.py, lines 4-5", "## File: Dockerfile",
                                      "## Diagnostics", "# Request\n\nWhy does it fail?")]
    assert order == sorted(order)
    assert "```python\ndef main():\n    return os.name\n```" in text
    assert "```dockerfile\nFROM python:3.11" in text
    assert "- error src/app.py:5: Name 'os' is not defined (pyright)" in text
    assert text.endswith("Why does it fail?")


def test_diagnostics_are_deduplicated_sorted_and_capped(ws: Workspace) -> None:
    many = [Diagnostic("src/app.py", 100 - i, f"problem {i}", severity="warning")
            for i in range(60)]
    same = Diagnostic("src/app.py", 1, "first", severity="Error", column=3, code="E1")
    turn = render_turn("x", Attachments(diagnostics=[*many, same, same]), ws, None, tokens)
    rows = (turn.message.content or "").split("## Diagnostics\n")[1].split("\n\n")[0]
    lines = rows.splitlines()
    assert lines[0] == "- error src/app.py:1:3: first ([E1])"
    assert len(lines) == 51 and lines[-1] == "(... and 11 more)"
    assert lines[1] == "- warning src/app.py:41: problem 59"


def test_an_attached_secret_or_missing_file_is_left_out_with_a_note(ws: Workspace) -> None:
    turn = render_turn("x", Attachments(files=[".env", "missing.py"]), ws, None, tokens)
    text = turn.message.content or ""
    assert "real-secret" not in text
    assert "## File: .env\n(not included: the workspace's deny list keeps it" in text
    assert "## File: missing.py\n(not included: it does not exist)" in text
    assert len(turn.notes) == 2 and turn.notes[0].startswith(".env was not sent")


def test_a_selection_in_a_denied_file_is_not_sent(ws: Workspace) -> None:
    selection = Selection(".env", 1, 1, "API_TOKEN=real-secret")
    turn = render_turn("x", Attachments(selection=selection), ws, None, tokens)
    assert "real-secret" not in (turn.message.content or "")
    assert turn.notes


def test_an_empty_selection_is_a_cursor_position(ws: Workspace) -> None:
    turn = render_turn("x", Attachments(selection=Selection("src/app.py", 3, 3)), ws, None,
                       tokens)
    assert "## Cursor: src/app.py, line 3\n" in (turn.message.content or "")


def test_attached_files_read_through_the_overlay(ws: Workspace, project: Path) -> None:
    ws.open_document(project / "src" / "app.py", "unsaved = True\n", 7)
    turn = render_turn("x", Attachments(files=["src/app.py"]), ws, None, tokens)
    assert "```python\nunsaved = True\n```" in (turn.message.content or "")


def test_undecodable_bytes_still_make_a_sendable_message(ws: Workspace, project: Path) -> None:
    (project / "latin1.txt").write_bytes(b"caf\xe9\n")
    turn = render_turn("x", Attachments(files=["latin1.txt"]), ws, None, tokens)
    assert "caf\ufffd" in (turn.message.content or "")
    turn.message.wire_json().encode("utf-8")


# --- dedup ----------------------------------------------------------------------------------------


async def turn_with(ws: Workspace, attachments: Attachments) -> str:
    session = SessionContext(ws)
    turn = await session.render_turn("Go.", attachments, tokens)
    return turn.message.content or ""


async def test_an_attached_key_file_already_in_the_facts_is_referenced(ws: Workspace) -> None:
    text = await turn_with(ws, Attachments(files=["tsconfig.json"]))
    assert "## File: tsconfig.json\n(its text is in the project facts above)" in text
    assert "strict" not in text


async def test_package_json_is_only_partly_in_the_facts_so_it_is_sent_whole(
    ws: Workspace,
) -> None:
    text = await turn_with(ws, Attachments(files=["package.json"]))
    assert '"devDependencies"' in text and '"version": "1.2.3"' in text


async def test_a_key_file_changed_since_the_facts_is_sent(ws: Workspace, project: Path) -> None:
    session = SessionContext(ws)
    await session.system_messages()
    write(project / "tsconfig.json", '{"compilerOptions": {"strict": false}}\n')
    turn = await session.render_turn("Go.", Attachments(files=["tsconfig.json"]), tokens)
    assert '"strict": false' in (turn.message.content or "")


async def test_a_file_attached_twice_is_sent_once(ws: Workspace, project: Path) -> None:
    uri = (project / "src" / "app.py").as_uri()
    text = await turn_with(ws, Attachments(files=["src/app.py", "./src/app.py", uri]))
    assert text.count("## File: src/app.py") == 1
    assert text.count("def main():") == 1


async def test_instruction_files_attached_are_referenced(ws: Workspace) -> None:
    text = await turn_with(ws, Attachments(files=["AGENTS.md", ".agentls/instructions.md"]))
    assert "## File: AGENTS.md\n(its text is in the workspace instructions above)" in text
    assert ("## File: .agentls/instructions.md\n(its text is in the workspace instructions "
            "above)") in text
    assert "Use tabs." not in text and "French" not in text


async def test_a_selection_inside_an_attached_file_is_referenced_not_pasted(
    ws: Workspace,
) -> None:
    selection = Selection("src/app.py", 4, 5, "def main():\n    return os.name\n")
    text = await turn_with(ws, Attachments(selection=selection, files=["src/app.py"]))
    assert ("## Selection: src/app.py, lines 4-5\n(its text is in the attached file below)"
            in text)
    assert text.count("def main():") == 1


async def test_a_selection_inside_a_key_file_points_at_the_facts(ws: Workspace) -> None:
    selection = Selection("Dockerfile", 1, 1, "FROM python:3.11")
    text = await turn_with(ws, Attachments(selection=selection))
    assert "## Selection: Dockerfile, line 1\n(its text is in the project facts above)" in text
    assert "FROM python" not in text


async def test_instructions_of_a_second_root_attached_by_label_are_referenced(
    tmp_path: Path,
) -> None:
    write(tmp_path / "app" / "main.py")
    write(tmp_path / "lib" / ".agentls" / "instructions.md", "Lib rules.\n")
    ws = Workspace([tmp_path / "app", tmp_path / "lib"])
    text = await turn_with(ws, Attachments(files=["lib/.agentls/instructions.md"]))
    assert ("## File: lib/.agentls/instructions.md\n(its text is in the workspace instructions "
            "above)") in text


# --- the per-file cap -----------------------------------------------------------------------------


PYTHON_BODY = "".join(f"    value_{i} = compute({i}, 'padding padding padding')\n"
                      for i in range(40))


def long_python() -> str:
    parts = ["import os\nfrom pathlib import Path\n\n"]
    for i in range(30):
        parts.append(f"\n@decorator\ndef function_{i}(a, b):\n{PYTHON_BODY}")
    parts.append("\nclass Last:\n    async def method(self) -> None:\n        pass\n")
    return "".join(parts)


def test_a_long_file_is_cut_to_its_head_and_an_outline_of_the_rest(
    ws: Workspace, project: Path
) -> None:
    write(project / "src" / "big.py", long_python())
    total = long_python().count("\n")
    turn = render_turn("x", Attachments(files=["src/big.py"]), ws, None, tokens)
    text = turn.message.content or ""
    assert f"## File: src/big.py (cut to lines 1-{HEAD_LINES} of {total:,}" in text
    assert "and an outline of the rest" in text
    body = text.split("```python\n", 1)[1]
    assert body.startswith("import os\nfrom pathlib import Path\n")
    assert "value_39 = compute(39" in body  # from the head
    assert f"[... lines {HEAD_LINES + 1}-{total:,} cut; their imports and definitions" in body
    assert "def function_29(a, b):" in body and "class Last:" in body
    assert "    async def method(self) -> None:" in body
    assert "value_0 = compute(0" not in body.split("[... lines")[1]  # no bodies in the outline
    assert tokens(body) <= FILE_TOKEN_CAP
    assert turn.notes == (f"src/big.py was cut to lines 1-{HEAD_LINES} of {total:,} and an "
                          f"outline of the rest: it is over {FILE_TOKEN_CAP:,} tokens.",)


def test_a_file_whose_head_is_over_the_cap_becomes_an_outline(
    ws: Workspace, project: Path
) -> None:
    long_line = "x" * 400
    lines = ["import { a } from './a';", "export function first(x: number): number {"]
    lines += [f"  const s{i} = '{long_line}';" for i in range(150)]
    lines += ["}", "export class Second {", "  private helper(): void {", "  }", "}",
              "const arrow = async (x) => x;", "interface Shape { n: number }"]
    write(project / "src" / "huge.ts", "\n".join(lines) + "\n")
    turn = render_turn("x", Attachments(files=["src/huge.ts"]), ws, None, tokens)
    text = turn.message.content or ""
    assert "(cut to an outline of its imports and definitions, with line numbers" in text
    outline = text.split("```typescript\n", 1)[1].split("\n```", 1)[0].splitlines()
    assert outline == ["1: import { a } from './a';",
                       "2: export function first(x: number): number {",
                       "154: export class Second {",
                       "155:   private helper(): void {",
                       "158: const arrow = async (x) => x;",
                       "159: interface Shape { n: number }"]
    assert "outline" in turn.notes[0]


def test_the_cap_uses_the_given_token_counter(ws: Workspace) -> None:
    turn = render_turn("x", Attachments(files=["src/app.py"]), ws, None, lambda s: 3 * len(s),
                       file_token_cap=100)
    text = turn.message.content or ""
    assert "outline of its imports and definitions" in text
    assert "1: import os" in text and "4: def main():" in text


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("package main\n\nimport (\n\t\"fmt\"\n)\n\ntype Server struct {\n\tport int\n}\n\n"
         "func (s *Server) Run() error {\n\treturn nil\n}\n",
         ["1: package main", "3: import (", "7: type Server struct {",
          "11: func (s *Server) Run() error {"]),
        ("use std::io;\n\npub struct Config {\n    x: u8,\n}\n\nimpl Config {\n"
         "    pub fn new() -> Self {\n        Config { x: 0 }\n    }\n}\n\n"
         "pub(crate) async fn run() {}\nconst MAX: usize = 3;\n",
         ["1: use std::io;", "3: pub struct Config {", "7: impl Config {",
          "8:     pub fn new() -> Self {", "13: pub(crate) async fn run() {}",
          "14: const MAX: usize = 3;"]),
        ("const fs = require('fs');\nlet count = 0;\nexport default function main() {\n"
         "  if (count) {\n    return 1;\n  }\n}\n",
         ["1: const fs = require('fs');", "3: export default function main() {"]),
    ],
)
def test_outline_understands_several_languages(source: str, expected: list[str]) -> None:
    assert context._outline(source.splitlines(), first_line=1) == expected


# --- the request and prefix stability -------------------------------------------------------------


def test_build_request_messages_puts_system_history_then_turn() -> None:
    system = [Message.system("S")]
    history = [Message.user("a"), Message.assistant("b")]
    turn = Message.user("c")
    assert build_request_messages(system, history, turn) == [*system, *history, turn]
    assert build_request_messages(system, history) == [*system, *history]


def simulated_run(system: list[Message], iterations: int) -> list[list[Message]]:
    """The requests of one run: each iteration adds a tool call and its (small) result."""
    history = [Message.user("Earlier question."), Message.assistant("Earlier answer.")]
    turn = Message.user("Rename foo to bar across the project.")
    requests = [build_request_messages(system, history, turn)]
    grown = [*history, turn]
    for i in range(iterations):
        call = ToolCall(f"call_{i}", "search_text", json.dumps({"query": f"foo{i}"}))
        grown += [Message.assistant(None, [call]),
                  Message.tool(call.id, json.dumps({"ok": True, "matches": [f"a.py:{i}: foo"]}),
                               "search_text")]
        requests.append(build_request_messages(system, grown))
    return requests


async def test_prefix_stability_of_a_run_is_high_and_drops_when_the_system_changes(
    ws: Workspace,
) -> None:
    session = SessionContext(ws)
    system = await session.system_messages()
    requests = simulated_run(system, 6)
    ratios = [prefix_stability(a, b, tokens) for a, b in pairwise(requests)]

    def size(messages: list[Message]) -> int:
        return sum(tokens(m.wire_json()) for m in messages)

    for (a, b), ratio in zip(pairwise(requests), ratios, strict=True):
        # The whole last request is the next one's prefix: only what the step added is new.
        assert b[:len(a)] == a
        assert ratio == pytest.approx(size(a) / size(b))
    # (How high it is depends on the size of the system message; this workspace is tiny,
    # bench_engine measures it on a real run against the >= 95 % goal.)
    assert all(r >= 0.9 for r in ratios), ratios
    assert ratios == sorted(ratios)  # each step adds less relative to what is already there

    changed = [Message.system((system[0].content or "") + "\nOne more fact.")]
    after = build_request_messages(changed, requests[-1][1:])
    assert prefix_stability(requests[-1], after, tokens) == 0.0


def test_prefix_stability_counts_a_partly_changed_message_as_changed() -> None:
    system = [Message.system("s" * 400)]
    before = [*system, Message.user("u" * 400), Message.assistant("a" * 400)]
    after = [*system, Message.user("u" * 399 + "!"), Message.assistant("a" * 400)]
    ratio = prefix_stability(before, after, tokens)
    assert ratio == pytest.approx(tokens(system[0].wire_json())
                                  / sum(tokens(m.wire_json()) for m in after))
    assert prefix_stability(before, before, tokens) == 1.0
    assert prefix_stability([], [], tokens) == 1.0



def test_room_for_attachments_is_shared_between_files_and_selection(ws: Workspace) -> None:
    big = "".join(f"def f{i}():\n    return {i}\n" for i in range(3_000))
    for name in ("a.py", "b.py"):
        (ws.roots[0] / "src" / name).write_text(big)
    selection = Selection("src/app.py", 1, 5, "import os\n\n\ndef main():\n    return os.name\n")
    turn = render_turn("x", Attachments(selection=selection, files=["src/a.py", "src/b.py"]),
                       ws, None, tokens, room_tokens=3_000)
    text = turn.message.content or ""
    assert tokens(text) < 3_000 + 200
    assert "## File: src/a.py (cut to" in text and "## File: src/b.py (cut to" in text
    assert "```python\nimport os" in text  # the small selection fits whole
    assert [n for n in turn.notes if "was cut" in n] != []


def test_no_room_leaves_big_attachments_out_and_keeps_small_ones(ws: Workspace) -> None:
    (ws.roots[0] / "src" / "a.py").write_text("x = 1\n" * 5_000)
    turn = render_turn("x", Attachments(files=["src/a.py", "Dockerfile"]), ws, None, tokens,
                       room_tokens=100)
    text = turn.message.content or ""
    assert "## File: src/a.py\n(not included: the model's context has no room" in text
    assert "FROM python:3.11" in text  # 50 tokens of room each: the Dockerfile still fits
    assert any("attach fewer files" in n for n in turn.notes)


def test_the_prompt_and_shell_exec_agree_on_what_commands_see() -> None:
    # Since the sandbox (issue 14) commands run over the pending changes; the prompt said
    # they saw only the disk, which told the model its tests would check the old code.
    from agentls.tools.registry import DEFAULT_TOOLS

    shell = next(t for t in DEFAULT_TOOLS if t.name == "shell_exec")
    assert "sees your pending changes" in shell.description
    prompt = " ".join(BASE_SYSTEM_PROMPT.split())
    assert "and so do shell_exec's commands (run in a sandbox)" in prompt
    assert "the git tools, and a command whose result says it was not sandboxed, see only " \
        "the disk" in prompt
    assert "shell_exec and the git tools see only the disk" not in prompt
