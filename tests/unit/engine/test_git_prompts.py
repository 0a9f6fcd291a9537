"""Commit-message and PR-description prompts, and the repairs applied to the model's answer."""

from __future__ import annotations

import pytest

from agentls.engine.prompt.git_prompts import (
    DIFF_LIMIT_CHARS,
    SUBJECT_LIMIT,
    commit_message_messages,
    guess_commit_type,
    pr_description_messages,
    repair_commit_message,
    repair_pr_description,
    truncate_diff,
)

DIFF = "diff --git a/src/calc.py b/src/calc.py\n-    return a - b\n+    return a + b\n"


def test_commit_prompt_carries_the_seed_rules_and_the_diff() -> None:
    system, user = commit_message_messages(DIFF, " src/calc.py | 2 +-\n", hidden_files=1)
    assert system.role == "system" and user.role == "user"
    assert "Conventional Commits" in (system.content or "")
    assert "max 72 characters" in (system.content or "")
    assert "explain WHY, not WHAT" in (system.content or "")
    assert "imperative mood" in (system.content or "")
    assert (user.content or "").endswith(DIFF.rstrip())
    assert "src/calc.py | 2 +-" in (user.content or "")
    assert "1 staged file(s) are hidden" in (user.content or "")


def test_pr_prompt_lists_branch_base_commits_and_the_three_sections() -> None:
    system, user = pr_description_messages("feature/x", "origin/main",
                                           ["abc123 add x", "def456 test x"], DIFF)
    for section in ("## Summary", "## Changes", "## Testing"):
        assert section in (system.content or "")
    content = user.content or ""
    assert "Branch: feature/x" in content and "Base: origin/main" in content
    assert "- abc123 add x\n- def456 test x" in content
    assert content.endswith(DIFF.rstrip())


def test_a_huge_diff_is_cut_at_a_line_with_a_note() -> None:
    diff = "".join(f"+line {i}\n" for i in range(20_000))
    cut = truncate_diff(diff)
    assert len(cut) < DIFF_LIMIT_CHARS + 200
    body, note = cut.rsplit("\n[", 1)
    assert body.endswith("\n") or body.split("\n")[-1].startswith("+line")
    assert all(line.startswith("+line ") for line in body.strip().splitlines())
    assert "more characters not shown" in note
    assert truncate_diff(DIFF) == DIFF


def test_a_good_message_is_kept_as_it_is() -> None:
    message = "fix(calc): add numbers instead of subtracting them\n\nadd() returned a - b."
    assert repair_commit_message(message) == message


def test_a_long_subject_is_cut_at_a_word_and_kept_whole_in_the_body() -> None:
    long = ("feat(lsp): add lazily resolved code actions that run the agent in automation mode "
            "and return versioned edits")
    repaired = repair_commit_message(long + "\n\nThe editor must never wait for a model.")
    subject, blank, *body = repaired.splitlines()
    assert len(subject) <= SUBJECT_LIMIT
    assert subject.startswith("feat")
    assert not subject.endswith((" and", " the", " in", ","))
    assert blank == ""
    text = " ".join(body)
    assert "automation mode and return versioned edits" in text
    assert "The editor must never wait for a model." in text
    assert all(len(line) <= 72 for line in body)


def test_the_scope_is_dropped_before_words_are() -> None:
    description = "x" * 60 + " fix"
    repaired = repair_commit_message(f"fix(a-rather-long-scope): {description}")
    assert repaired == f"fix: {description}"


def test_wrappers_labels_and_a_trailing_period_are_removed() -> None:
    answer = '```\nCommit message: "docs: explain the fence."\n```'
    assert repair_commit_message(answer) == "docs: explain the fence"
    assert repair_commit_message("```text\nfix: a\n\nbody\n```") == "fix: a\n\nbody"


@pytest.mark.parametrize(("answer", "paths", "expected"), [
    ("Add tests for add()", ["tests/test_calc.py"], "test: add tests for add()"),
    ("Explain install", ["README.md", "docs/install.rst"], "docs: explain install"),
    ("Bump versions", ["pyproject.toml"], "chore: bump versions"),
    ("Fix: handle empty input", ["src/a.py"], "fix: handle empty input"),
    ("FEAT(api): new endpoint", ["src/a.py"], "feat(api): new endpoint"),
])
def test_a_missing_or_miscased_type_is_repaired(answer: str, paths: list[str],
                                                 expected: str) -> None:
    assert repair_commit_message(answer, paths) == expected


def test_an_empty_answer_still_gives_a_message() -> None:
    assert repair_commit_message("  \n", ["src/calc.py"]) == "chore: update calc.py"


def test_body_lines_are_wrapped_bullets_indented_and_code_left_alone() -> None:
    bullet = "- " + "word " * 30
    code = "    " + "x" * 100
    repaired = repair_commit_message(f"fix: a\n{bullet}\n\n{code}")
    lines = repaired.splitlines()
    assert lines[1] == ""  # a blank line after the subject
    assert all(len(line) <= 72 for line in lines if not line.startswith("    x"))
    assert lines[3].startswith("  word")  # continuation lines of a bullet are indented
    assert code in lines


def test_guess_commit_type() -> None:
    assert guess_commit_type([]) == "chore"
    assert guess_commit_type(["src/app.test.ts", "tests/a.py"]) == "test"
    assert guess_commit_type(["src/a.py", "README.md"]) == "chore"


def test_pr_description_gets_its_sections_in_order() -> None:
    answer = ("```markdown\nThis adds x.\n\n### Testing:\nran pytest\n\n# Changes\n- x\n"
              "## Notes\nnone\n```")
    repaired = repair_pr_description(answer)
    assert repaired == ("## Summary\nThis adds x.\n\n## Changes\n- x\n\n"
                        "## Testing\nran pytest\n\n## Notes\nnone\n")


def test_missing_pr_sections_get_visible_placeholders() -> None:
    repaired = repair_pr_description("## Summary\nAdds x.")
    assert repaired.index("## Summary") < repaired.index("## Changes") < repaired.index(
        "## Testing")
    assert "(not described: say how this was tested)" in repaired
