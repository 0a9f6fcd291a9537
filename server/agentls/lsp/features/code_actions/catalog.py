"""The code actions AgentLS offers, and their listing, which must answer as fast as a bare
pygls server (DESIGN.md decision 8).

Listing reads nothing but the request (no document text, no disk, no model): titles and
kinds are computed once per settings change, and each action carries ``data`` (uri,
range, version, action id, as JSON text) so ``codeAction/resolve`` does the work later;
clients that cannot resolve get the ``agentls.runAction`` command with the same data as
its argument instead. Imported at server start-up: standard library and lsprotocol only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types as lsp

TITLE_PREFIX = "AgentLS: "
RUN_ACTION_COMMAND = "agentls.runAction"
ACTIONS_SETTING = "actions"  # agentls.actions: [{title, kind, prompt}]
MAX_TITLE_MESSAGE = 80
PLACEHOLDERS = ("selection", "file", "language", "diagnostics")
_KIND = re.compile(r"^$|^[A-Za-z]+(\.[A-Za-z0-9_-]+)*$")
ADVERTISED_KINDS = (lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.Refactor,
                    lsp.CodeActionKind.RefactorRewrite, lsp.CodeActionKind.Source)


@dataclass(frozen=True)
class UserAction:
    """One entry of the ``actions`` setting."""

    title: str
    prompt: str  # {selection}, {file}, {language} and {diagnostics} are filled in
    kind: str = "refactor.rewrite"


def parse_user_actions(raw: Any) -> tuple[list[UserAction], list[str]]:
    """The valid entries of ``agentls.actions`` and one problem per bad one (naming it and
    the expected form); a bad entry is left out, the others are kept."""
    name = f"agentls.{ACTIONS_SETTING}"
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [f"`{name}` must be a list of {{title, kind, prompt}} objects, got {raw!r}"]
    actions: list[UserAction] = []
    problems: list[str] = []
    for index, entry in enumerate(raw):
        where = f"`{name}[{index}]`"
        if not isinstance(entry, dict):
            problems.append(f"{where} must be an object like {{\"title\": \"Translate\", "
                            '"kind": "refactor.rewrite", "prompt": "Translate {selection}"}')
            continue
        unknown = sorted(set(entry) - {"title", "kind", "prompt"})
        title, prompt = entry.get("title"), entry.get("prompt")
        kind = entry.get("kind", "refactor.rewrite")
        if unknown:
            problems.append(f"{where} has unknown key(s) {', '.join(unknown)}; expected "
                            "title, kind and prompt")
        elif not isinstance(title, str) or not title.strip():
            problems.append(f"{where}.title must be a non-empty string")
        elif not isinstance(prompt, str) or not prompt.strip():
            problems.append(f"{where}.prompt must be a non-empty string (placeholders: "
                            + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS) + ")")
        elif not isinstance(kind, str) or not _KIND.match(kind):
            problems.append(f"{where}.kind = {kind!r} is not a code action kind; expected "
                            "e.g. 'quickfix', 'refactor.rewrite', 'source' or ''")
        else:
            actions.append(UserAction(title.strip(), prompt, kind))
    return actions, problems


@dataclass(frozen=True)
class ActionSpec:
    id: str  # "fix", "rewrite", "document", "tests", "explain", "user:<n>"
    title: str
    kind: str
    needs_selection: bool
    edits: bool = True  # False: the answer is text to show, never an edit
    may_create_files: bool = False  # besides the file itself (new test files)
    template: str | None = None  # user-defined actions only
    wants_diagnostics: bool = False  # the template uses {diagnostics}
    data_suffix: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # The end of the action's JSON data, after the shared uri, range and version.
        extra: dict[str, str] = {"action": self.id}
        if self.template is not None:
            extra["title"] = self.title  # to find a user action again if settings moved
        object.__setattr__(self, "data_suffix",
                           "," + json.dumps(extra, separators=(",", ":"))[1:])


FIX = ActionSpec("fix", "", "quickfix", needs_selection=False)
# Every problem in the range in one run and one reviewed edit, above a handful of single fixes.
FIX_ALL = ActionSpec("fixall", "", "quickfix", needs_selection=False)
REWRITE = ActionSpec("rewrite", "AgentLS: Rewrite selection…", "refactor.rewrite", True)
DOCUMENT = ActionSpec("document", "AgentLS: Add documentation", "refactor.rewrite", True)
TESTS = ActionSpec("tests", "AgentLS: Write tests", "refactor.rewrite", True,
                   may_create_files=True)
EXPLAIN = ActionSpec("explain", "AgentLS: Explain", "", needs_selection=False, edits=False)
BUILTIN = {spec.id: spec for spec in (FIX, FIX_ALL, REWRITE, DOCUMENT, TESTS, EXPLAIN)}


# Single fixes listed besides the grouped one: a menu stays a menu (issue 27).
MAX_SINGLE_FIXES = 5
# Listings whose diagnostics are kept for the grouped fix (it carries none, to stay small).
RECALLED_LISTINGS = 32


def fix_all_title(count: int, selection: bool) -> str:
    where = "in the selection" if selection else "on this line"
    return f"{TITLE_PREFIX}Fix the {count} problems {where}"


def fix_title(message: str) -> str:
    first = " ".join(message.strip().splitlines()[0].split()) if message.strip() else "problem"
    if len(first) > MAX_TITLE_MESSAGE:
        first = first[: MAX_TITLE_MESSAGE - 1].rstrip() + "…"
    return f"{TITLE_PREFIX}Fix '{first}'"


def user_specs(actions: Sequence[UserAction]) -> tuple[ActionSpec, ...]:
    specs = []
    for index, action in enumerate(actions):
        title = action.title.strip()
        if not title.startswith(TITLE_PREFIX.strip()):
            title = TITLE_PREFIX + title
        specs.append(ActionSpec(f"user:{index}", title, action.kind, needs_selection=False,
                                template=action.prompt,
                                wants_diagnostics="{diagnostics}" in action.prompt))
    return tuple(specs)


def kind_allowed(kind: str, only: Sequence[str] | None) -> bool:
    """LSP ``context.only``: a requested kind admits itself and its sub-kinds; '' admits all."""
    if not only:
        return True
    return any(k == "" or kind == k or kind.startswith(k + ".") for k in only)


def _overlaps(diagnostic: lsp.Range, selection: lsp.Range) -> bool:
    # By line: a cursor anywhere on a diagnostic's line is "at" it, as editors show it.
    return (diagnostic.start.line <= selection.end.line
            and diagnostic.end.line >= selection.start.line)


@dataclass
class ActionLister:
    """Lists the actions for one request; rebuilt when the settings change."""

    user_actions: tuple[ActionSpec, ...] = ()
    # (uri, version, range) -> the diagnostics a grouped fix names, newest last.
    _recalled: dict[tuple[str, int | None, tuple[int, int, int, int]],
                    tuple[lsp.Diagnostic, ...]] = field(default_factory=dict, repr=False)
    _only_cache: dict[tuple[str, ...], tuple[bool, tuple[ActionSpec, ...],
                                             tuple[ActionSpec, ...]]] = field(
        default_factory=dict, repr=False)

    @classmethod
    def from_settings(cls, actions: Sequence[UserAction]) -> ActionLister:
        return cls(user_specs(actions))

    def _filtered(self, only: Sequence[str] | None) -> tuple[
            bool, tuple[ActionSpec, ...], tuple[ActionSpec, ...]]:
        key = tuple(str(getattr(k, "value", k)) for k in only) if only else ()
        cached = self._only_cache.get(key)
        if cached is None:
            specs = [s for s in (*BUILTIN.values(), *self.user_actions)
                     if s not in (FIX, FIX_ALL) and kind_allowed(s.kind, key)]
            selection = tuple(s for s in specs if s.needs_selection)
            always = tuple(s for s in specs if not s.needs_selection)
            cached = (kind_allowed(FIX.kind, key), selection, always)
            self._only_cache[key] = cached
        return cached

    def list(self, uri: str, version: int | None, params: lsp.CodeActionParams,
             *, resolve: bool) -> list[lsp.CodeAction]:
        """The actions for ``params``: each carries ``data`` when the client resolves it,
        else the ``agentls.runAction`` command with the same data as its argument."""
        fixes, selection_specs, always = self._filtered(params.context.only)
        request_range = params.range
        start, end = request_range.start, request_range.end
        # data is JSON text: pygls passes a string through as it is, where it would walk a
        # dict field by field; that walk was most of the listing's cost (bench_lsp).
        shared = json.dumps({"uri": uri, "range": {
            "start": {"line": start.line, "character": start.character},
            "end": {"line": end.line, "character": end.character}}, "version": version},
            separators=(",", ":"))[:-1]
        out: list[lsp.CodeAction] = []
        if fixes:
            found = [d for d in params.context.diagnostics
                     if _overlaps(d.range, request_range)]
            if len(found) > 1:
                self._recall(uri, version, request_range, found)
                out.append(_action(fix_all_title(len(found), start != end), FIX_ALL, shared,
                                   resolve, None))
            for diagnostic in found[:MAX_SINGLE_FIXES]:
                out.append(_action(fix_title(diagnostic.message), FIX, shared, resolve,
                                   [diagnostic]))
        if start != end:
            for spec in selection_specs:
                out.append(_action(spec.title, spec, shared, resolve, None))
        for spec in always:
            diagnostics = None
            if spec.wants_diagnostics:
                diagnostics = [d for d in params.context.diagnostics
                               if _overlaps(d.range, request_range)]
            # Explain shows text rather than an edit: it always runs as a command.
            out.append(_action(spec.title, spec, shared, resolve and spec.edits, diagnostics))
        return out

    def _recall(self, uri: str, version: int | None, selection: lsp.Range,
                found: Sequence[lsp.Diagnostic]) -> None:
        key = (uri, version, _range_key(selection))
        self._recalled.pop(key, None)
        self._recalled[key] = tuple(found)
        while len(self._recalled) > RECALLED_LISTINGS:
            del self._recalled[next(iter(self._recalled))]

    def recalled(self, uri: str, version: int | None,
                 selection: lsp.Range) -> tuple[lsp.Diagnostic, ...] | None:
        """The diagnostics a grouped fix was listed for, while this server remembers them."""
        return self._recalled.get((uri, version, _range_key(selection)))


def _range_key(selection: lsp.Range) -> tuple[int, int, int, int]:
    return (selection.start.line, selection.start.character, selection.end.line,
            selection.end.character)


def _action(title: str, spec: ActionSpec, shared: str, resolve: bool,
            diagnostics: list[lsp.Diagnostic] | None) -> lsp.CodeAction:
    data = shared + spec.data_suffix
    if resolve:
        return lsp.CodeAction(title=title, kind=spec.kind, diagnostics=diagnostics, data=data)
    arguments = json.loads(data)
    if diagnostics:  # the command's argument is all it will get back
        arguments["diagnostics"] = [diagnostic_data(d) for d in diagnostics]
    return lsp.CodeAction(title=title, kind=spec.kind, diagnostics=diagnostics,
                          command=lsp.Command(title, RUN_ACTION_COMMAND, arguments=[arguments]))


def action_data(raw: Any) -> Any:
    """A listed action's data as a dict (it travels as JSON text)."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return None
    return raw


def diagnostic_data(diagnostic: lsp.Diagnostic) -> dict[str, Any]:
    r = diagnostic.range
    data: dict[str, Any] = {
        "range": {"start": {"line": r.start.line, "character": r.start.character},
                  "end": {"line": r.end.line, "character": r.end.character}},
        "message": diagnostic.message,
    }
    if diagnostic.severity is not None:
        data["severity"] = int(diagnostic.severity)
    if diagnostic.source:
        data["source"] = diagnostic.source
    if diagnostic.code is not None:
        data["code"] = diagnostic.code
    return data


def spec_for(action_id: str, title: str | None,
             user_actions: Sequence[ActionSpec]) -> ActionSpec | None:
    """The spec an action id names; a user action must still exist with the same title."""
    if action_id in BUILTIN:
        return BUILTIN[action_id]
    for spec in user_actions:
        if spec.id == action_id and (title is None or spec.title == title):
            return spec
    # The settings changed since listing: find the action by its title.
    return next((s for s in user_actions if title is not None and s.title == title), None)
