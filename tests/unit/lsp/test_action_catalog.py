"""Listing code actions: titles, kinds, `only`, data, and the actions setting."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from agentls.lsp.features.code_actions.catalog import (
    RUN_ACTION_COMMAND,
    ActionLister,
    UserAction,
    action_data,
    fix_title,
    kind_allowed,
    parse_user_actions,
    spec_for,
    user_specs,
)

URI = "file:///work/app.py"
TEXT = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


def rng(sl: int, sc: int, el: int, ec: int) -> lsp.Range:
    return lsp.Range(lsp.Position(sl, sc), lsp.Position(el, ec))


def diag(line: int, message: str = "wrong operator") -> lsp.Diagnostic:
    return lsp.Diagnostic(rng(line, 4, line, 16), message, lsp.DiagnosticSeverity.Error,
                          code="E1", source="lint")


def params(selection: lsp.Range, diagnostics: list[lsp.Diagnostic] | None = None,
           only: list[str] | None = None) -> lsp.CodeActionParams:
    return lsp.CodeActionParams(lsp.TextDocumentIdentifier(URI), selection,
                                lsp.CodeActionContext(diagnostics or [], only=only))


def titles(actions: list[lsp.CodeAction]) -> list[str]:
    return [a.title for a in actions]


def test_a_diagnostic_under_the_cursor_gives_a_fix_and_explain() -> None:
    actions = ActionLister().list(URI, 7, params(rng(1, 5, 1, 5), [diag(1), diag(5)]),
                                  resolve=True)
    assert titles(actions) == ["AgentLS: Fix 'wrong operator'", "AgentLS: Explain"]
    fix = actions[0]
    assert fix.kind == "quickfix" and fix.edit is None and fix.command is None
    assert fix.diagnostics is not None and fix.diagnostics[0].range.start.line == 1
    assert action_data(fix.data) == {"uri": URI, "version": 7, "action": "fix",
                        "range": {"start": {"line": 1, "character": 5},
                                  "end": {"line": 1, "character": 5}}}


def test_a_selection_adds_rewrite_document_and_tests() -> None:
    actions = ActionLister().list(URI, 1, params(rng(0, 0, 2, 0)), resolve=True)
    assert titles(actions) == ["AgentLS: Rewrite selection…", "AgentLS: Add documentation",
                               "AgentLS: Write tests", "AgentLS: Explain"]
    assert [a.kind for a in actions] == ["refactor.rewrite"] * 3 + [""]
    assert all(a.edit is None for a in actions)


def test_explain_always_runs_as_a_command_and_others_only_without_resolve() -> None:
    with_resolve = ActionLister().list(URI, 1, params(rng(0, 0, 2, 0), [diag(1)]),
                                       resolve=True)
    assert [a.command is not None for a in with_resolve] == [False] * 4 + [True]
    without = ActionLister().list(URI, 1, params(rng(0, 0, 2, 0), [diag(1)]), resolve=False)
    assert all(a.command is not None and a.command.command == RUN_ACTION_COMMAND
               for a in without)
    command = without[0].command
    assert command is not None and command.arguments is not None
    (arguments,) = command.arguments
    assert isinstance(arguments, dict)
    assert arguments["action"] == "fix"
    assert arguments["diagnostics"][0]["message"] == "wrong operator"


@pytest.mark.parametrize(("only", "expected"), [
    (["quickfix"], ["AgentLS: Fix 'wrong operator'"]),
    (["refactor"], ["AgentLS: Rewrite selection…", "AgentLS: Add documentation",
                    "AgentLS: Write tests"]),
    (["source"], []),
    ([""], ["AgentLS: Fix 'wrong operator'", "AgentLS: Rewrite selection…",
            "AgentLS: Add documentation", "AgentLS: Write tests", "AgentLS: Explain"]),
])
def test_only_filters_by_kind_and_sub_kind(only: list[str], expected: list[str]) -> None:
    actions = ActionLister().list(URI, 1, params(rng(1, 0, 2, 0), [diag(1)], only=only),
                                  resolve=True)
    assert titles(actions) == expected


def test_kind_allowed() -> None:
    assert kind_allowed("refactor.rewrite", ["refactor"])
    assert not kind_allowed("refactorx", ["refactor"])
    assert kind_allowed("", None) and not kind_allowed("", ["quickfix"])


def test_long_and_multiline_messages_make_short_titles() -> None:
    title = fix_title("first line " + "x" * 200 + "\nsecond line")
    assert title.startswith("AgentLS: Fix 'first line x") and title.endswith("…'")
    assert "second" not in title and len(title) < 100


def test_user_actions_are_listed_with_their_kind_and_title() -> None:
    lister = ActionLister.from_settings([
        UserAction("Translate comments", "Translate {selection}"),
        UserAction("AgentLS: Lint", "{diagnostics}", kind="source"),
    ])
    actions = lister.list(URI, 3, params(rng(1, 0, 1, 0), [diag(1)]), resolve=True)
    assert titles(actions)[-2:] == ["AgentLS: Translate comments", "AgentLS: Lint"]
    translate, lint = actions[-2:]
    assert translate.kind == "refactor.rewrite" and lint.kind == "source"
    assert action_data(translate.data)["action"] == "user:0"
    assert action_data(translate.data)["title"] == "AgentLS: Translate comments"
    assert translate.diagnostics is None  # its prompt does not use {diagnostics}
    assert lint.diagnostics is not None and len(lint.diagnostics) == 1
    assert titles(lister.list(URI, 3, params(rng(1, 0, 1, 0), only=["source"]),
                              resolve=True)) == ["AgentLS: Lint"]


def test_user_actions_setting_keeps_good_entries_and_names_bad_ones() -> None:
    actions, problems = parse_user_actions([
        {"title": "Shout", "prompt": "Uppercase {selection}"},
        {"title": "", "prompt": "x"},
        {"title": "K", "kind": "re factor", "prompt": "y"},
        {"title": "P"},
        {"title": "U", "prompt": "z", "colour": "red"},
        "not an object",
    ])
    assert actions == [UserAction("Shout", "Uppercase {selection}", "refactor.rewrite")]
    assert problems[0] == "`agentls.actions[1]`.title must be a non-empty string"
    assert "`agentls.actions[2]`.kind = 're factor' is not a code action kind" in problems[1]
    assert "{selection}" in problems[2] and "colour" in problems[3]
    assert problems[4].startswith("`agentls.actions[5]` must be an object like")
    assert parse_user_actions(None) == ([], [])
    assert "must be a list" in parse_user_actions({"title": "x"})[1][0]


def test_user_actions_are_found_by_title_when_settings_moved_them() -> None:
    before = user_specs([UserAction("A", "a"), UserAction("B", "b")])
    after = user_specs([UserAction("B", "b2")])
    found = spec_for("user:1", before[1].title, after)
    assert found is not None and found.template == "b2"
    assert spec_for("user:0", "AgentLS: A", after) is None
