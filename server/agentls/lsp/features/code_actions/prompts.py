"""What a code action asks the model, with which attachments and tools.

Imported when an action runs (it needs the engine's attachment types), never at start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types as lsp

from agentls.engine.prompt.levels import Attachments, Diagnostic, Selection
from agentls.lsp.features.code_actions.catalog import PLACEHOLDERS, ActionSpec

MAX_ITERATIONS = 6
READ_ONLY_TOOLS = ("list_files", "read_file", "search_text", "git_status", "git_diff",
                   "git_log")
EDIT_TOOLS = ("edit_file", "write_file", "apply_patch")
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
_SEVERITIES = {1: "error", 2: "warning", 3: "information", 4: "hint"}


@dataclass(frozen=True)
class ActionTarget:
    """The document and range an action works on, as they were when it started."""

    uri: str
    path: Path
    display: str  # the path as the model sees it
    language: str
    range: lsp.Range
    selection_text: str  # the text in ``range``
    line_text: str = ""  # the whole line the range starts on
    diagnostics: tuple[lsp.Diagnostic, ...] = ()

    @property
    def start_line(self) -> int:
        return self.range.start.line + 1

    @property
    def end_line(self) -> int:
        end = self.range.end
        # A selection ending at column 0 ends on the line before.
        last = end.line if end.character or end.line == self.range.start.line else end.line - 1
        return max(last + 1, self.start_line)

    @property
    def has_selection(self) -> bool:
        return bool(self.selection_text.strip())

    @property
    def lines(self) -> str:
        if self.end_line == self.start_line:
            return f"line {self.start_line}"
        return f"lines {self.start_line}-{self.end_line}"


def _severity(diagnostic: lsp.Diagnostic) -> str:
    return _SEVERITIES.get(int(diagnostic.severity), "error") if diagnostic.severity else "error"


def diagnostic_lines(target: ActionTarget) -> str:
    rows = []
    for d in target.diagnostics:
        code = f"[{d.code}]" if d.code is not None else None
        origin = " ".join(x for x in (d.source, code) if x)
        row = f"- {_severity(d)} at line {d.range.start.line + 1}: {d.message}"
        rows.append(row + (f" ({origin})" if origin else ""))
    return "\n".join(rows) or "(no diagnostics)"


def fill_placeholders(template: str, target: ActionTarget) -> str:
    """The template with {selection}, {file}, {language} and {diagnostics} filled in; any
    other braces (code in the prompt) are left as they are."""
    values = {
        "selection": target.selection_text or target.line_text,  # a cursor: its line
        "file": target.display,
        "language": target.language or "plain text",
        "diagnostics": diagnostic_lines(target),
    }
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def action_prompt(spec: ActionSpec, target: ActionTarget) -> str:
    """The request the model gets; the selection, file and diagnostics go as attachments."""
    where = f"{target.display} ({target.lines})"
    only_this = (f"Change only {target.display}: edits to any other file will be discarded. "
                 "Make the smallest change that does the job, then stop with one sentence "
                 "saying what you changed.")
    if spec.id == "fix":
        return f"Fix this problem in {target.display}:\n{diagnostic_lines(target)}\n\n{only_this}"
    if spec.id == "fixall":
        return (f"Fix these {len(target.diagnostics)} problems in {target.display}, all in one "
                f"change:\n{diagnostic_lines(target)}\n\n{only_this}")
    if spec.id == "rewrite":
        return (f"Rewrite the selected code in {where} so it is clearer and simpler, without "
                f"changing what it does. Keep the surrounding code as it is. {only_this}")
    if spec.id == "document":
        language = target.language or "the file's language"
        return (f"Add documentation to the selected code in {where}: docstrings or doc "
                f"comments in the style this file and {language} already use. Do not change "
                f"any behaviour. {only_this}")
    if spec.id == "tests":
        return (f"Write tests for the selected code in {where}. Put them where this project "
                "keeps its tests, in a new test file if none fits, with the test framework "
                f"the project already uses. Do not change existing files other than "
                f"{target.display}; new files are fine. Stop with one sentence saying what "
                "you added.")
    if spec.id == "explain":
        subject = (f"the selected code in {where}" if target.has_selection
                   else f"the code around {target.lines} of {target.display}")
        return (f"Explain {subject}: what it does, how it does it, and anything surprising or "
                "risky. Answer in Markdown, short and concrete. Do not change any file.")
    assert spec.template is not None, f"unknown built-in action {spec.id!r}"
    return f"{fill_placeholders(spec.template, target)}\n\n{only_this}"


def action_attachments(target: ActionTarget) -> Attachments:
    """The file, the selection (or cursor) and the diagnostics, as the engine attaches them."""
    selection = Selection(str(target.path), target.start_line, target.end_line,
                          target.selection_text)
    diagnostics = tuple(
        Diagnostic(str(target.path), d.range.start.line + 1, d.message, _severity(d),
                   d.range.start.character + 1, d.source,
                   str(d.code) if d.code is not None else None)
        for d in target.diagnostics
    )
    return Attachments(selection=selection, files=(str(target.path),), diagnostics=diagnostics)


def action_tools(spec: ActionSpec) -> tuple[str, ...]:
    """Read-only tools on the workspace; the editing ones too when the action edits."""
    return READ_ONLY_TOOLS + EDIT_TOOLS if spec.edits else READ_ONLY_TOOLS
