"""Context references: what the person pointed at in a chat turn (``@file``, ``#buffer``,
``#selection``, ``#diagnostics``, ``#changes``, ``@symbol``, a URL), resolved by the server.

Clients only send references; this module turns them into the turn's level-4
``Attachments`` (engine/prompt/attachments.py renders, trims and budgets them) and into one chip
per attachment (kind, name, lines, size) that the session's record keeps with the turn.
What cannot be attached (a fenced or outside-the-workspace file, a deleted one, a URL: the
server has no network) is refused with the reason and attaches nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agentls.engine.prompt.attachments import Attachments, Diagnostic, Selection, Snippet
from agentls.workspace.fence import FenceError, Workspace

if TYPE_CHECKING:
    from agentls.index.service import WorkspaceSearch

log = logging.getLogger(__name__)

ReferenceKind = Literal["file", "buffer", "selection", "diagnostics", "changes", "symbol",
                        "url"]
REFERENCE_KINDS: tuple[str, ...] = ("file", "buffer", "selection", "diagnostics", "changes",
                                    "symbol", "url")

URL_REFUSAL = ("AgentLS does not fetch web pages (the server has no network access); paste "
               "the part you need into the chat, or save it in the workspace and attach the "
               "file")
MAX_CHANGES_BYTES = 400_000  # a diff larger than this is cut before the prompt's own budget


@dataclass(frozen=True)
class Reference:
    """One reference as a client sends it. ``target``: a path or URI (file, buffer,
    selection, diagnostics), a symbol name, or a URL."""

    kind: ReferenceKind
    target: str = ""
    start_line: int = 0  # selection: 1-based, inclusive
    end_line: int = 0
    text: str | None = None  # selection: its text, read from the editor's buffer
    diagnostics: tuple[Diagnostic, ...] = ()


@dataclass(frozen=True)
class Chip:
    """An attachment as the turn shows it."""

    kind: str
    name: str
    lines: int = 0  # lines attached (a selection's or symbol's span, a file's length)
    size: int = 0  # bytes
    range: str = ""  # "12-30" for a selection or a symbol
    note: str = ""  # trimmed, and how

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in ("", None)}


@dataclass(frozen=True)
class Refusal:
    kind: str
    name: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def note(self) -> str:
        return f"{self.name} was not attached: {self.reason}"


@dataclass
class ResolvedContext:
    attachments: Attachments
    chips: list[Chip] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


SymbolSearch = Callable[[], "WorkspaceSearch"]
ChangesReader = Callable[[], str]  # the uncommitted changes as one unified diff


_REFUSALS = {
    "DENIED": "the workspace's deny list keeps it from the model",
    "IGNORED": "an ignore file (.gitignore or .agentlsignore) excludes it",
    "OUTSIDE_WORKSPACE": "it is outside the workspace",
    "NOT_FOUND": "it does not exist (deleted or moved?)",
    "IS_A_DIRECTORY": "it is a folder; attach the files in it",
    "NOT_A_FILE": "it is not a regular file",
}


def refusal_reason(exc: FenceError) -> str:
    return _REFUSALS.get(exc.code, exc.message)


def resolve(
    references: Sequence[Reference],
    ws: Workspace,
    *,
    base: Attachments | None = None,
    symbols: SymbolSearch | None = None,
    changes: ChangesReader | None = None,
) -> ResolvedContext:
    """The attachments and chips of ``references``, added to ``base`` (the context the client
    sent the older way: document, range, files, diagnostics). Blocking (reads files, runs
    git, searches the index): call it off the event loop."""
    base = base or Attachments()
    selection = base.selection
    files = list(base.files)
    diagnostics = list(base.diagnostics)
    snippets = list(base.snippets)
    out = ResolvedContext(Attachments())
    seen: set[tuple[str, str]] = set()
    for ref in references:
        key = (ref.kind, ref.target if ref.kind != "selection"
               else f"{ref.target}:{ref.start_line}-{ref.end_line}")
        if key in seen:
            continue
        seen.add(key)
        if ref.kind == "url":
            out.refused.append(Refusal("url", ref.target, URL_REFUSAL))
        elif ref.kind in ("file", "buffer"):
            chip = _file_chip(ref, ws, out)
            if chip is not None:
                files.append(ref.target)
                out.chips.append(chip)
        elif ref.kind == "selection":
            found = _selection_chip(ref, ws, out)
            if found is not None:
                chip, text = found
                if selection is not None:  # a second selection goes along as a snippet
                    snippets.append(Snippet(f"Selection: {chip.name}, lines {chip.range}",
                                            text, chip.name))
                else:
                    selection = Selection(ref.target, ref.start_line,
                                          max(ref.end_line, ref.start_line), text)
                out.chips.append(chip)
        elif ref.kind == "diagnostics":
            diagnostics.extend(ref.diagnostics)
            text = "\n".join(d.message for d in ref.diagnostics)
            scope = _display(ws, ref.target) if ref.target else "workspace"
            out.chips.append(Chip("diagnostics", f"diagnostics ({scope})",
                                  lines=len(ref.diagnostics), size=len(text.encode())))
        elif ref.kind == "changes":
            snippet = _changes_snippet(changes, out)
            if snippet is not None:
                snippets.append(snippet)
        elif ref.kind == "symbol":
            snippet = _symbol_snippet(ref.target, ws, symbols, out)
            if snippet is not None:
                snippets.append(snippet)
    out.attachments = Attachments(selection, tuple(dict.fromkeys(files)), tuple(diagnostics),
                                  tuple(snippets))
    return out


def _display(ws: Workspace, target: str) -> str:
    try:
        return ws.resolve(target).display
    except FenceError:
        return target


def _file_chip(ref: Reference, ws: Workspace, out: ResolvedContext) -> Chip | None:
    try:
        wp = ws.resolve(ref.target)
        data = ws.read_bytes(wp)
    except FenceError as exc:
        out.refused.append(Refusal(ref.kind, ref.target, refusal_reason(exc)))
        return None
    if b"\x00" in data[:8192]:
        out.refused.append(Refusal(ref.kind, wp.display, "it is a binary file"))
        return None
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    return Chip(ref.kind, wp.display, lines=lines, size=len(data))


def _selection_chip(ref: Reference, ws: Workspace,
                    out: ResolvedContext) -> tuple[Chip, str] | None:
    try:
        wp = ws.resolve(ref.target)
    except FenceError as exc:
        out.refused.append(Refusal("selection", ref.target, refusal_reason(exc)))
        return None
    start, end = ref.start_line, max(ref.end_line, ref.start_line)
    text = ref.text or ""
    if not text:
        try:
            lines = ws.read_text(wp).splitlines(keepends=True)
        except FenceError as exc:
            out.refused.append(Refusal("selection", wp.display, refusal_reason(exc)))
            return None
        text = "".join(lines[start - 1:end])
    span = f"{start}-{end}" if end > start else str(start)
    return Chip("selection", wp.display, lines=end - start + 1, size=len(text.encode()),
                range=span), text


def _changes_snippet(changes: ChangesReader | None, out: ResolvedContext) -> Snippet | None:
    if changes is None:
        out.refused.append(Refusal("changes", "uncommitted changes",
                                   "this front-end cannot read the repository's changes"))
        return None
    try:
        diff = changes()
    except Exception as exc:  # git missing, not a repository: said, never a crashed turn
        out.refused.append(Refusal("changes", "uncommitted changes", str(exc)))
        return None
    if not diff.strip():
        out.refused.append(Refusal("changes", "uncommitted changes",
                                   "there are none (the working tree matches HEAD)"))
        return None
    note = ""
    data = diff.encode()
    if len(data) > MAX_CHANGES_BYTES:
        diff = data[:MAX_CHANGES_BYTES].decode(errors="ignore")
        diff = diff[: diff.rfind("\n") + 1] + "[... the rest of the diff was cut]\n"
        note = f"cut to the first {MAX_CHANGES_BYTES // 1000} KB"
    files = sum(1 for line in diff.splitlines() if line.startswith("diff --git "))
    out.chips.append(Chip("changes", f"uncommitted changes ({files} file{'s' * (files != 1)})",
                          lines=diff.count("\n"), size=len(data), note=note))
    return Snippet("Uncommitted changes (git diff HEAD)", diff, "diff")


def _symbol_snippet(name: str, ws: Workspace, symbols: SymbolSearch | None,
                    out: ResolvedContext) -> Snippet | None:
    if symbols is None:
        out.refused.append(Refusal("symbol", name, "the search index is not available here"))
        return None
    try:
        hits = symbols().search(name, 20, lexical_only=True).hits
    except Exception as exc:  # an index that cannot open: the turn goes on without it
        log.warning("symbol %r not attached: the search index failed: %s", name, exc)
        out.refused.append(Refusal("symbol", name, f"the search index failed: {exc}"))
        return None
    wanted = name.strip().lower()
    exact = [(h.path, start, end, symbol) for h in hits for start, end, symbol in h.spans()
             if symbol and (symbol.lower() == wanted or symbol.lower().endswith("." + wanted))]
    if not exact:
        out.refused.append(Refusal(
            "symbol", name, "the search index knows no symbol by that name (`agentls index` "
            "builds it; a new file is indexed when saved)"))
        return None
    path, start_line, end_line, symbol = exact[0]
    try:
        wp = ws.resolve(path)
        lines = ws.read_text(wp).splitlines(keepends=True)
    except FenceError as exc:
        out.refused.append(Refusal("symbol", name, refusal_reason(exc)))
        return None
    text = "".join(lines[start_line - 1:end_line])
    span = f"{start_line}-{end_line}"
    out.chips.append(Chip("symbol", f"{symbol} ({wp.display})",
                          lines=end_line - start_line + 1, size=len(text.encode()),
                          range=span))
    return Snippet(f"Symbol: {symbol} ({wp.display}, lines {span})", text, wp.display)


def mark_trimmed(chips: Sequence[Chip], notes: Sequence[str]) -> list[Chip]:
    """The chips with the note render_turn gave their attachment (cut to fit, left out)."""
    out = []
    for chip in chips:
        name = chip.name.split(" (")[0] if chip.kind == "symbol" else chip.name
        said = next((n for n in notes if n.startswith(name + " ")
                     or n.startswith(f"The selection in {name} ")
                     or n.startswith(f"the selection in {name} ")), "")
        out.append(Chip(chip.kind, chip.name, chip.lines, chip.size, chip.range,
                        chip.note or said) if said else chip)
    return out


class ChangesUnavailable(Exception):
    """The uncommitted changes cannot be read (no repository, git failed); says why."""


async def uncommitted_diff(ws: Workspace) -> str:
    """The working tree's changes against HEAD, staged and not, as one unified diff."""
    from agentls.tools.git.read import git_diff

    parts = []
    for staged in (True, False):
        result = await git_diff(ws, staged=staged)
        if not result.get("ok"):
            raise ChangesUnavailable(str(result.get("message") or result.get("error")))
        parts.append(str(result.get("diff") or ""))
    return "".join(parts)
