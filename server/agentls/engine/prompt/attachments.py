"""Level 4 of the prompt: the selection, files and diagnostics the person attached to a
turn, less what an earlier level already holds. The levels are described in
:mod:`agentls.engine.prompt.levels`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from agentls.engine.prompt.facts import ProjectFacts
from agentls.engine.prompt.file_text import IncludedFile, fenced, language_of, sendable
from agentls.engine.prompt.instructions import Instructions
from agentls.engine.prompt.outline import CountTokens, fit_text
from agentls.llm.messages import Message
from agentls.workspace.fence import FenceError, Workspace

FILE_TOKEN_CAP = 5_000
MIN_ATTACHMENT_TOKENS = 200  # below this a cut file says too little: leave it out instead
MAX_DIAGNOSTICS = 50
MAX_DIAGNOSTIC_CHARS = 500


@dataclass(frozen=True)
class Selection:
    """What the person selected (or where the cursor is, with empty text)."""

    path: str
    start_line: int  # 1-based, inclusive
    end_line: int
    text: str = ""


@dataclass(frozen=True)
class Diagnostic:
    path: str
    line: int  # 1-based
    message: str
    severity: str = "error"  # error, warning, information, hint
    column: int | None = None  # 1-based
    source: str | None = None  # "pyright", "eslint" ...
    code: str | None = None


@dataclass(frozen=True)
class Snippet:
    """A text the person attached that is no file of its own: the uncommitted changes, a
    symbol's lines, a second selection (engine/prompt/references.py)."""

    title: str  # the section's heading, e.g. "Symbol: parse (src/p.py, lines 3-20)"
    text: str
    source: str = ""  # a file name (for the fence's language) or "diff"


@dataclass(frozen=True)
class Attachments:
    """Level 4: what the person attached to this turn. Paths as the editor gives them
    (relative, absolute or ``file://`` URIs)."""

    selection: Selection | None = None
    files: Sequence[str] = ()
    diagnostics: Sequence[Diagnostic] = ()
    snippets: Sequence[Snippet] = ()

    def __bool__(self) -> bool:
        return bool(self.selection or self.files or self.diagnostics or self.snippets)


@dataclass(frozen=True)
class RenderedTurn:
    message: Message  # the turn's user message: attachments, then the request
    notes: tuple[str, ...] = ()  # for the person: what was cut or left out, and why


@dataclass(frozen=True)
class _FileSection:
    abs: Path
    text: str  # the file's text the prompt holds (here or at an earlier level)
    where: str  # where that text is, seen from the selection
    rendered: str


def render_turn(
    prompt: str,
    attachments: Attachments | None,
    ws: Workspace,
    facts: ProjectFacts | None,
    count_tokens: CountTokens,
    *,
    instructions: Instructions | None = None,
    file_token_cap: int = FILE_TOKEN_CAP,
    room_tokens: int | None = None,
    related: str | None = None,
) -> RenderedTurn:
    """The turn's user message: the attachments (level 4) that earlier levels don't already
    hold, each attached file within ``file_token_cap`` tokens, then the request.

    ``room_tokens``: what the model's context leaves for attachments next to the prompt and
    the earlier levels. It is shared between the attached files and the selection; what does
    not fit is cut (or, with too little room, left out) with a note, never sent whole to fail
    as ``context_too_long``. ``related``: code the search index relates to the request
    (``engine/prompt/related_code.py``), placed after the attachments."""
    if not attachments:
        if related:
            return RenderedTurn(Message.user(sendable(f"{related}\n\n# Request\n\n{prompt}")))
        return RenderedTurn(Message.user(prompt))
    starved = False  # so little room that a cut file would say nothing: leave it out
    if room_tokens is not None:
        items = (len(attachments.files) + len(attachments.snippets)
                 + (1 if attachments.selection is not None else 0))
        share = max(0, room_tokens) // max(1, items)
        starved = share < MIN_ATTACHMENT_TOKENS
        file_token_cap = min(file_token_cap, share)
    earlier: dict[Path, IncludedFile] = {}
    for source in (instructions, facts):
        if source is not None:
            for item in source.included_files():
                earlier.setdefault(item.abs, item)
    notes: list[str] = []
    files = _attached_files(attachments.files, ws, earlier, count_tokens, file_token_cap, notes,
                            starved)
    sections: list[str] = []
    if attachments.selection is not None:
        sections.append(_selection_section(attachments.selection, ws, earlier, files,
                                           count_tokens, file_token_cap, notes, starved))
    sections += [f.rendered for f in files]
    sections += [_snippet_section(s, count_tokens, file_token_cap, notes, starved)
                 for s in attachments.snippets]
    if attachments.diagnostics:
        sections.append(_diagnostics_section(attachments.diagnostics, ws))
    if related:
        sections.append(related)
    content = ("# Context attached by the person\n\n" + "\n\n".join(sections)
               + "\n\n# Request\n\n" + prompt)
    return RenderedTurn(Message.user(sendable(content)), tuple(notes))


def _attached_files(
    paths: Sequence[str],
    ws: Workspace,
    earlier: dict[Path, IncludedFile],
    count_tokens: CountTokens,
    cap: int,
    notes: list[str],
    starved: bool = False,
) -> list[_FileSection]:
    sections: list[_FileSection] = []
    seen: set[Path] = set()
    for given in paths:
        try:
            wp = ws.resolve(given)
        except FenceError as exc:
            # The person's own instructions are denied to tools yet already in the prompt.
            located = _lexical_abs(ws, given)
            known = earlier.get(located)
            if known is None:
                sections.append(_left_out(given, located, _refusal(exc), notes))
            elif located not in seen:
                sections.append(_reference(known))
            seen.add(located)
            continue
        if wp.abs in seen:
            continue
        seen.add(wp.abs)
        try:
            text = ws.read_text(wp)
        except FenceError as exc:
            sections.append(_left_out(wp.display, wp.abs, _refusal(exc), notes))
            continue
        known = earlier.get(wp.abs)
        if known is not None and known.text == text:
            sections.append(_reference(known))
            continue
        if "\x00" in text:
            sections.append(_left_out(wp.display, wp.abs, "it is a binary file", notes))
            continue
        if starved and count_tokens(text) > cap:
            sections.append(_left_out(wp.display, wp.abs, _NO_ROOM, notes))
            continue
        shown, heading, note = fit_text(text, wp.display, count_tokens, cap)
        if note:
            notes.append(note)
        rendered = f"## File: {heading}\n" + fenced(shown, language_of(wp.abs.name))
        sections.append(_FileSection(wp.abs, shown, "the attached file below", rendered))
    return sections


_NO_ROOM = ("the model's context has no room for it next to the request; attach fewer files "
            "or a smaller selection, or use a model with a larger context_max_tokens")

_REFUSALS = {
    "DENIED": "the workspace's deny list keeps it from the model",
    "IGNORED": "an ignore file (.gitignore or .agentlsignore) excludes it",
    "OUTSIDE_WORKSPACE": "it is outside the workspace",
    "NOT_FOUND": "it does not exist",
    "IS_A_DIRECTORY": "it is a folder",
    "NOT_A_FILE": "it is not a regular file",
}


def _refusal(exc: FenceError) -> str:
    """Why an attachment was left out, short enough for the person and the model."""
    return _REFUSALS.get(exc.code, exc.message)


def _reference(known: IncludedFile) -> _FileSection:
    where = f"{known.where} above"
    return _FileSection(known.abs, known.text, where,
                        f"## File: {known.path}\n(its text is in {where})")


def _left_out(shown: str, abs_path: Path, reason: str, notes: list[str]) -> _FileSection:
    notes.append(f"{shown} was not sent to the model: {reason}")
    return _FileSection(abs_path, "", "", f"## File: {shown}\n(not included: {reason})")


def _selection_section(
    selection: Selection,
    ws: Workspace,
    earlier: dict[Path, IncludedFile],
    files: list[_FileSection],
    count_tokens: CountTokens,
    cap: int,
    notes: list[str],
    starved: bool = False,
) -> str:
    lines = (f"line {selection.start_line}" if selection.end_line <= selection.start_line
             else f"lines {selection.start_line}-{selection.end_line}")
    try:
        wp = ws.resolve(selection.path)
    except FenceError as exc:
        notes.append(f"The selection in {selection.path} was not sent: {_refusal(exc)}")
        return f"## Selection: {selection.path}, {lines}\n(not included: {_refusal(exc)})"
    heading = f"## Selection: {wp.display}, {lines}"
    text = selection.text
    if not text.strip():
        return f"## Cursor: {wp.display}, {lines}"
    for section in files:
        if section.abs == wp.abs and text in section.text:
            return f"{heading}\n(its text is in {section.where})"
    known = earlier.get(wp.abs)
    if known is not None and text in known.text:
        return f"{heading}\n(its text is in {known.where} above)"
    if starved and count_tokens(text) > cap:
        notes.append(f"The selection in {wp.display} was not sent: {_NO_ROOM}")
        return f"{heading}\n(not included: {_NO_ROOM})"
    shown, _, note = fit_text(text, f"the selection in {wp.display}", count_tokens, cap)
    if note:
        notes.append(note)
    return f"{heading}\n{fenced(shown, language_of(wp.abs.name))}"


def _snippet_section(snippet: Snippet, count_tokens: CountTokens, cap: int, notes: list[str],
                     starved: bool) -> str:
    if starved and count_tokens(snippet.text) > cap:
        notes.append(f"{snippet.title} was not sent to the model: {_NO_ROOM}")
        return f"## {snippet.title}\n(not included: {_NO_ROOM})"
    shown, heading, note = fit_text(snippet.text, snippet.title, count_tokens, cap)
    if note:
        notes.append(note)
    language = "diff" if snippet.source == "diff" else language_of(snippet.source)
    return f"## {heading}\n" + fenced(shown, language)


_SEVERITY_ORDER = {"error": 0, "warning": 1, "information": 2, "info": 2, "hint": 3}


def _diagnostics_section(diagnostics: Sequence[Diagnostic], ws: Workspace) -> str:
    rows: dict[tuple[str, int, int, str, str], str] = {}
    for d in diagnostics:
        try:
            shown = ws.resolve(d.path).display
        except FenceError:
            shown = d.path
        severity = d.severity.lower()
        where = f"{shown}:{d.line}" + (f":{d.column}" if d.column else "")
        origin = " ".join(x for x in (d.source, f"[{d.code}]" if d.code else None) if x)
        message = " ".join(d.message.split())[:MAX_DIAGNOSTIC_CHARS]
        row = f"- {severity} {where}: {message}" + (f" ({origin})" if origin else "")
        key = (shown, d.line, d.column or 0, severity, message)
        rows.setdefault(key, row)
    ordered = sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2],
                                                   _SEVERITY_ORDER.get(kv[0][3], 9), kv[0][4]))
    lines = [row for _, row in ordered[:MAX_DIAGNOSTICS]]
    if len(ordered) > MAX_DIAGNOSTICS:
        lines.append(f"(... and {len(ordered) - MAX_DIAGNOSTICS} more)")
    return "## Diagnostics\n" + "\n".join(lines)


def _lexical_abs(ws: Workspace, given: str) -> Path:
    """Where a path the fence refused would be (to recognise the person's instruction file)."""
    text = given.strip()
    if text.startswith("file://"):
        text = unquote(urlparse(text).path)
    if os.path.isabs(text):
        return Path(os.path.realpath(text))
    root = ws.roots[0]
    if len(ws.roots) > 1:
        first, _, rest = text.partition("/")
        for candidate in ws.roots:
            if ws.display_path(candidate) == first:
                root, text = candidate, rest
    return Path(os.path.realpath(root / text))
