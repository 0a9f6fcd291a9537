"""Running one code action: the agent in ``automation`` mode on the action's file, and the
edit (or explanation) that comes out of it.

Shared by ``codeAction/resolve`` and the ``agentls.runAction`` command. The model may read
the workspace but change only the action's file ("Write tests" may also create files);
anything else it changed is left out and the person is told. The document must still be at
the version the action was listed for, before the run and after it: otherwise there is no
edit, only a message saying why.

Imported when the first action runs, never at start-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from agentls.engine.run_request import RunRequest
from agentls.lsp.features.code_actions.catalog import (
    ActionSpec,
    action_data,
    fix_all_title,
    fix_title,
    spec_for,
)
from agentls.lsp.features.code_actions.prompts import (
    MAX_ITERATIONS,
    ActionTarget,
    action_attachments,
    action_prompt,
    action_tools,
)
from agentls.lsp.services import delivery, documents
from agentls.lsp.services.protocol import ParamsError, plain
from agentls.lsp.services.turn import Turn, TurnRefused, TurnRequest
from agentls.workspace.changeset import ChangeSet

if TYPE_CHECKING:
    from agentls.lsp.services.server_context import ServerContext

log = logging.getLogger(__name__)

EXPLAIN_FOLDER = Path(".agentls") / "explain"
EXPLANATIONS_KEPT = 20
MESSAGE_EXCERPT = 300


@dataclass(frozen=True)
class ActionData:
    """The ``data`` a listed action carries back (also the runAction command's argument)."""

    uri: str
    range: lsp.Range
    version: int | None
    action: str
    title: str | None = None  # user-defined actions: to find them again
    diagnostics: tuple[lsp.Diagnostic, ...] = ()  # command path only


@dataclass
class ActionOutcome:
    spec: ActionSpec | None
    edit: lsp.WorkspaceEdit | None = None
    label: str = ""
    message: str | None = None  # for the person, when something is not as asked
    message_type: lsp.MessageType = lsp.MessageType.Warning
    turn: Turn | None = None
    text: str = ""  # the model's answer
    explanation: Path | None = None
    dropped: list[Path] = field(default_factory=list)
    outgoing: delivery.Outgoing | None = None  # the edit as delivery sends it (command path)

    def payload(self) -> dict[str, Any]:
        """What the runAction command answers."""
        out: dict[str, Any] = {"title": self.spec.title if self.spec else None,
                               "text": self.text, "edit": self.edit is not None}
        if self.turn is not None:
            out.update(sessionId=self.turn.session_id, runId=self.turn.run_id,
                       stopReason=self.turn.stop_reason)
        if self.message:
            out["message"] = self.message
        if self.explanation is not None:
            out["uri"] = self.explanation.as_uri()
        return out


def parse_action_data(raw: Any,
                      diagnostics: Sequence[lsp.Diagnostic] | None = None) -> ActionData:
    """The action's data; ``diagnostics`` are the resolved action's own (the command path
    carries them in the data instead)."""
    from lsprotocol.converters import get_converter

    data = action_data(plain(raw))
    if not isinstance(data, dict) or not isinstance(data.get("uri"), str) or not isinstance(
            data.get("action"), str):
        raise ParamsError("an AgentLS action needs its data: {uri, range, version, action} as "
                          "listed by textDocument/codeAction")
    converter = get_converter()
    try:
        selection = converter.structure(data.get("range"), lsp.Range)
        found = (list(diagnostics) if diagnostics is not None else
                 converter.structure(data.get("diagnostics") or [], list[lsp.Diagnostic]))
    except Exception as exc:
        raise ParamsError(f"the action's range or diagnostics are malformed ({exc})") from None
    version = data.get("version")
    title = data.get("title")
    return ActionData(data["uri"], selection, version if isinstance(version, int) else None,
                      data["action"], title if isinstance(title, str) else None, tuple(found))


def _display(ls: ServerContext, path: Path) -> str:
    for root in ls.roots:
        with contextlib.suppress(ValueError):
            return path.relative_to(root).as_posix()
    return str(path)


def _same_file(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _stale_message(display: str) -> str:
    return (f"AgentLS: {display} changed since this action was offered, so its result was "
            "not applied. Choose the action again to run it on the current text.")


def build_target(ls: ServerContext, data: ActionData) -> ActionTarget | str:
    """The action's document as it is now, or a message saying why the action cannot run."""
    path = documents.path_of(data.uri)
    if path is None:
        return "AgentLS actions work on files: save this document in the workspace first."
    display = _display(ls, path)
    document = ls.workspace.text_documents.get(data.uri)
    if document is None:
        return f"AgentLS: {display} is no longer open; open it and choose the action again."
    if data.version is not None and document.version != data.version:
        return _stale_message(display)
    try:
        selection = document.text_in_client_range(data.range)
    except (IndexError, ValueError):
        selection = ""
    lines = document.lines
    line = lines[data.range.start.line] if data.range.start.line < len(lines) else ""
    return ActionTarget(data.uri, path, display, document.language_id or "", data.range,
                        selection, line.rstrip("\r\n"), data.diagnostics)


def keep_only(changeset: ChangeSet, allowed: Path,
              allow_creates: bool) -> tuple[ChangeSet, list[Path]]:
    """The changes to ``allowed`` (and new files when ``allow_creates``); the rest dropped."""
    kept = ChangeSet()
    dropped: list[Path] = []
    for change in changeset.changes():
        assert change.text is not None or change.kind == "delete"
        if change.kind == "update" and _same_file(change.path, allowed):
            kept.update(change.path, change.text or "", base=change.base)
        elif change.kind == "create" and allow_creates:
            kept.create(change.path, change.text or "", base=change.base)
        else:
            dropped.append(change.old_path or change.path)
    return kept, dropped


async def run_action(ls: ServerContext, data: ActionData,
                     user_actions: Sequence[ActionSpec],
                     run_id: str | None = None) -> ActionOutcome:
    """Run the action ``data`` names; the outcome has the edit, or a message, or both."""
    spec = spec_for(data.action, data.title, user_actions)
    if spec is None:
        return ActionOutcome(None, message=f"AgentLS: the action {data.title or data.action!r} "
                             "is no longer in the settings (agentls.actions).")
    if spec.id == "fixall":
        spec = dataclasses.replace(spec, title=fix_all_title(
            len(data.diagnostics), data.range.start != data.range.end))
    elif not spec.title:  # a fix is named after its diagnostic
        message = data.diagnostics[0].message if data.diagnostics else "problem"
        spec = dataclasses.replace(spec, title=fix_title(message))
    target = build_target(ls, data)
    if isinstance(target, str):
        return ActionOutcome(spec, message=target)
    run = RunRequest(action_prompt(spec, target), attachments=action_attachments(target),
                     tools=action_tools(spec), max_iterations=MAX_ITERATIONS)
    request = TurnRequest(
        run, mode="automation", title=f"{spec.title} ({target.display})",
        progress_title=spec.title, rate_limited=False, interactive=False, send_edit=False,
        run_id=run_id)
    try:
        turn = await ls.runs.run(request, await ls.engine())
    except TurnRefused as exc:
        return ActionOutcome(spec, message=exc.message, message_type=lsp.MessageType.Error)
    outcome = ActionOutcome(spec, turn=turn, text=turn.text)
    if turn.result is None or turn.stop_reason == "cancelled":
        outcome.message = f"{spec.title}: cancelled."
        outcome.message_type = lsp.MessageType.Info
        return outcome
    if turn.error is not None:  # what a failed run left behind may be half done: no edit
        hint = f" {turn.error.get('hint')}" if turn.error.get("hint") else ""
        outcome.message = f"{spec.title} failed: {turn.error.get('message', '')}{hint}"
        outcome.message_type = lsp.MessageType.Error
        return outcome
    outcome.label = f"{spec.title} ({target.display})"
    if not spec.edits:
        outcome.explanation = await asyncio.to_thread(
            write_explanation, ls.root or target.path.parent, target, spec, turn.text)
        return outcome
    await _plan_edit(ls, spec, target, turn, outcome, data.version)
    return outcome


async def _plan_edit(ls: ServerContext, spec: ActionSpec, target: ActionTarget,
                     turn: Turn, outcome: ActionOutcome, listed_version: int | None) -> None:
    assert turn.result is not None
    kept, dropped = keep_only(turn.result.changeset, target.path, spec.may_create_files)
    outcome.dropped = dropped
    notes: list[str] = []
    if dropped:
        names = ", ".join(_display(ls, p) for p in dropped)
        notes.append(f"left out its changes to {names}: this action may only change "
                     f"{target.display}")
    if kept.is_empty():
        said = _excerpt(turn.text)
        outcome.message = "; ".join([f"{spec.title}: the model made no change", *notes]) + (
            f". It said: {said}" if said else ".")
        return
    changes = kept.changes()
    stale = await delivery.stale_paths(ls, changes)
    document = ls.workspace.text_documents.get(target.uri)
    if listed_version is not None and (document is None or document.version != listed_version):
        stale.append(target.path)  # changed after listing, even if before the run read it
    if stale:
        outcome.message = _stale_message(", ".join(dict.fromkeys(_display(ls, p)
                                                                 for p in stale)))
        return
    display = turn.workspace.display_path if turn.workspace is not None else str
    # Minimal edits of a big file take a while: not on the event loop.
    plan = await asyncio.to_thread(delivery.plan, ls, kept, display, changes)
    if plan.skipped:
        names = ", ".join(_display(ls, c.path) for c in plan.skipped)
        notes.append(f"this editor cannot create files through LSP, so {names} was left out")
    if turn.stop_reason == "max_iterations":
        notes.append(f"the model stopped after {MAX_ITERATIONS} steps, so the change may be "
                     "incomplete")
    outcome.edit = plan.edit
    outcome.outgoing = delivery.Outgoing(turn.session_id, kept, turn.result.actions_message_id,
                                         display, label=outcome.label, planned=plan)
    if notes:
        outcome.message = f"{spec.title}: " + "; ".join(notes) + "."


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MESSAGE_EXCERPT else flat[: MESSAGE_EXCERPT - 1] + "…"


# --- explanations ----------------------------------------------------------------------------


def write_explanation(root: Path, target: ActionTarget, spec: ActionSpec, text: str) -> Path:
    """The explanation as a Markdown file under ``.agentls/explain/`` (a real file: every
    editor can show it); the oldest beyond ``EXPLANATIONS_KEPT`` are removed."""
    from agentls.engine.sessions.state_dir import ensure_state_dir

    ensure_state_dir(root)  # .agentls/ with its .gitignore, so git never sees these
    folder = root / EXPLAIN_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", target.path.name)
    name = f"{time.strftime('%Y%m%d-%H%M%S')}-{stem}-L{target.start_line}.md"
    path = folder / name
    heading = f"# {spec.title.removeprefix('AgentLS: ')}: {target.display}, {target.lines}"
    body = text.strip() or "(the model gave no explanation)"
    path.write_text(f"{heading}\n\n{body}\n", encoding="utf-8")
    old = sorted(folder.glob("*.md"), key=lambda p: p.stat().st_mtime)[:-EXPLANATIONS_KEPT]
    for stale in old:
        with contextlib.suppress(OSError):
            stale.unlink()
    return path
