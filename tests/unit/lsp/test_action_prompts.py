"""What each code action asks the model, with which attachments and tools."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from agentls.lsp.features.code_actions.catalog import BUILTIN, UserAction, user_specs
from agentls.lsp.features.code_actions.prompts import (
    ActionTarget,
    action_attachments,
    action_prompt,
    action_tools,
    fill_placeholders,
)


def rng(sl: int, sc: int, el: int, ec: int) -> lsp.Range:
    return lsp.Range(lsp.Position(sl, sc), lsp.Position(el, ec))


def diag(line: int, message: str = "wrong operator") -> lsp.Diagnostic:
    return lsp.Diagnostic(rng(line, 4, line, 16), message, lsp.DiagnosticSeverity.Warning,
                          code="E1", source="lint")


def target(selection: lsp.Range, text: str = "def add(a, b):\n    return a - b\n",
           diagnostics: tuple[lsp.Diagnostic, ...] = ()) -> ActionTarget:
    return ActionTarget("file:///work/app.py", Path("/work/app.py"), "app.py", "python",
                        selection, text, "def add(a, b):", diagnostics)


def test_placeholders_are_filled_and_other_braces_kept() -> None:
    t = target(rng(0, 0, 2, 0), diagnostics=(diag(1),))
    filled = fill_placeholders("In {file} ({language}) fix {diagnostics} in:\n{selection}"
                               "\nkeep {other} and {{x}}", t)
    assert filled.startswith("In app.py (python) fix - warning at line 2: wrong operator "
                             "(lint [E1]) in:\ndef add(a, b):\n    return a - b\n")
    assert filled.endswith("keep {other} and {{x}}")


def test_a_cursor_fills_selection_with_its_line() -> None:
    t = target(rng(0, 3, 0, 3), text="")
    assert fill_placeholders("<{selection}>", t) == "<def add(a, b):>"
    assert fill_placeholders("{diagnostics}", t) == "(no diagnostics)"


def test_lines_of_a_selection() -> None:
    assert target(rng(0, 0, 2, 0)).lines == "lines 1-2"  # ends at column 0 of line 3
    assert target(rng(4, 3, 4, 3)).lines == "line 5"
    assert target(rng(1, 2, 3, 1)).lines == "lines 2-4"


def test_prompts_name_the_file_and_limit_the_change() -> None:
    t = target(rng(1, 0, 2, 0), diagnostics=(diag(1),))
    fix = action_prompt(BUILTIN["fix"], t)
    assert "wrong operator" in fix and "Change only app.py" in fix
    assert "Change only app.py" in action_prompt(BUILTIN["rewrite"], t)
    assert "python" in action_prompt(BUILTIN["document"], t)
    assert "new files are fine" in action_prompt(BUILTIN["tests"], t)
    explain = action_prompt(BUILTIN["explain"], t)
    assert "the selected code in app.py (line 2)" in explain
    assert "Do not change any file" in explain
    (shout,) = user_specs([UserAction("Shout", "Uppercase {selection}")])
    assert action_prompt(shout, t).startswith("Uppercase def add(a, b):\n    return a - b\n")
    assert "Change only app.py" in action_prompt(shout, t)


def test_explain_may_only_read_and_edits_never_run_commands() -> None:
    explain, fix = BUILTIN["explain"], BUILTIN["fix"]
    assert "edit_file" not in action_tools(explain) and "read_file" in action_tools(explain)
    assert {"edit_file", "apply_patch", "read_file", "search_text"} <= set(action_tools(fix))
    assert "shell_exec" not in action_tools(fix) and "delete_file" not in action_tools(fix)


def test_attachments_carry_selection_file_and_diagnostics() -> None:
    attached = action_attachments(target(rng(1, 0, 2, 0), diagnostics=(diag(1),)))
    assert attached.selection is not None
    assert (attached.selection.start_line, attached.selection.end_line) == (2, 2)
    assert attached.files == ("/work/app.py",)
    (found,) = attached.diagnostics
    assert (found.line, found.column, found.severity, found.code) == (2, 5, "warning", "E1")
