"""Code actions, lazily: ``textDocument/codeAction`` lists, ``codeAction/resolve`` works.

The listing answers from the request and the open document's version alone (no model, no
disk; see action_catalog.py). ``codeAction/resolve`` runs the agent on the action's file
and returns the action with its versioned ``edit``, or without one and a
``window/showMessage`` saying why (the document changed, the model changed nothing ...).
Clients that cannot resolve get every action with the ``agentls.runAction`` command, which
does the same work and sends the edit through ``workspace/applyEdit``; "Explain" always
runs as that command and shows its answer as a Markdown document.

User-defined actions come from the ``agentls.actions`` setting: ``[{title, kind, prompt}]``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from agentls.lsp.features.code_actions.catalog import (
    ACTIONS_SETTING,
    ADVERTISED_KINDS,
    FIX_ALL,
    RUN_ACTION_COMMAND,
    ActionLister,
    parse_user_actions,
)
from agentls.lsp.services import editor_settings as lsp_settings
from agentls.lsp.services.commands import register_command
from agentls.lsp.services.server_context import ServerContext

if TYPE_CHECKING:
    from agentls.lsp.features.code_actions.action_runner import ActionData, ActionOutcome

log = logging.getLogger(__name__)


class CodeActions:
    """The feature's state: the lister (rebuilt on settings change) and what the client can
    do, read once."""

    def __init__(self, server: ServerContext) -> None:
        self.server = server
        self.lister = ActionLister()
        self._resolve: bool | None = None

    def reload(self) -> None:
        actions, _ = parse_user_actions(self.server.client_settings.get(ACTIONS_SETTING))
        self.lister = ActionLister.from_settings(actions)

    def client_resolves(self) -> bool:
        """Whether the client resolves ``edit`` lazily (else actions carry a command)."""
        if self._resolve is None:
            caps = self.server.client_capabilities.text_document
            code_action = caps.code_action if caps is not None else None
            support = code_action.resolve_support if code_action is not None else None
            self._resolve = support is not None and "edit" in support.properties
        return self._resolve

    def list(self, params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
        uri = params.text_document.uri
        document = self.server.workspace.text_documents.get(uri)
        if document is None:  # only open documents: reading the disk is not allowed here
            return None
        return self.lister.list(uri, document.version, params, resolve=self.client_resolves())


def _tell(ls: ServerContext, outcome: ActionOutcome) -> None:
    if outcome.message:
        ls.window_show_message(lsp.ShowMessageParams(type=outcome.message_type,
                                                     message=outcome.message))


async def resolve_action(ls: ServerContext, feature: CodeActions,
                         action: lsp.CodeAction) -> lsp.CodeAction:
    from agentls.lsp.features.code_actions.action_runner import parse_action_data, run_action
    from agentls.lsp.services.protocol import ParamsError

    if action.edit is not None or action.command is not None:
        return action  # resolved already, or runs as a command (Explain)
    try:
        data = parse_action_data(action.data, diagnostics=action.diagnostics or ())
    except ParamsError as exc:
        log.info("codeAction/resolve of a foreign or broken action %r: %s", action.title, exc)
        return action
    outcome = _unknown_problems(feature, data) or await run_action(
        ls, _recalled(feature, data), feature.lister.user_actions)
    _tell(ls, outcome)
    if outcome.edit is not None:
        action.edit = outcome.edit
    return action


def _recalled(feature: CodeActions, data: ActionData) -> ActionData:
    """A grouped fix carries no diagnostics (its answer stays small): the listing kept them."""
    if data.action != FIX_ALL.id:
        return data
    found = feature.lister.recalled(data.uri, data.version, data.range)
    return dataclasses.replace(data, diagnostics=found or ())


def _unknown_problems(feature: CodeActions, data: ActionData) -> ActionOutcome | None:
    from agentls.lsp.features.code_actions.action_runner import ActionOutcome

    if data.action != FIX_ALL.id or feature.lister.recalled(data.uri, data.version,
                                                            data.range):
        return None
    return ActionOutcome(FIX_ALL, message="AgentLS: the problems this fix was offered for are "
                         "no longer known to the server (it restarted, or the file changed). "
                         "Open the code actions again and choose the fix once more.")


async def run_action_command(ls: ServerContext, feature: CodeActions,
                             arguments: list[Any]) -> dict[str, Any]:
    """``agentls.runAction``: answers at once ``{title, runId, started: true}`` (or, when
    nothing can run, ``{title, message}``); the run goes on in the background and reports
    through ``$/progress``, ``window/showMessage`` and ``workspace/applyEdit`` (DESIGN.md 13:
    no client request is held while a run goes on, so clients with short request timeouts,
    eglot's 10 s, work, and eglot can send the edit's didChange as soon as it applies it)."""
    import uuid

    from agentls.lsp.features.code_actions.action_runner import parse_action_data
    from agentls.lsp.services.protocol import ParamsError

    if len(arguments) != 1:
        raise ParamsError(f"{RUN_ACTION_COMMAND} takes one argument, the action's data")
    data = parse_action_data(arguments[0])
    unknown = _unknown_problems(feature, data)
    if unknown is not None:
        _tell(ls, unknown)
        return unknown.payload()
    run_id = uuid.uuid4().hex[:12]
    ls.spawn(_run_in_background(ls, feature, data, run_id))
    return {"title": data.title or None, "runId": run_id, "started": True}


async def _run_in_background(ls: ServerContext, feature: CodeActions, data: ActionData,
                             run_id: str) -> None:
    """The command's run, after its answer: the edit through the one delivery path, or the
    explanation shown; what goes wrong is said with window/showMessage."""
    from agentls.lsp.features.code_actions.action_runner import run_action

    try:
        outcome = await run_action(ls, _recalled(feature, data), feature.lister.user_actions,
                                   run_id=run_id)
        _tell(ls, outcome)
        if outcome.explanation is not None:
            await _show_explanation(ls, outcome)
        elif outcome.edit is not None:
            await _apply(ls, feature, outcome, data)
    except Exception:
        log.exception("agentls.runAction failed")
        ls.window_show_message(lsp.ShowMessageParams(
            type=lsp.MessageType.Error,
            message=f"{data.title or 'AgentLS'} failed unexpectedly; see the AgentLS log."))


async def _apply(ls: ServerContext, feature: CodeActions, outcome: ActionOutcome,
                 data: ActionData) -> tuple[bool, str | None]:
    """Send the action's edit through the one delivery path (lsp/services/delivery.py), and offer to
    run the action again when it did not land."""
    from lsprotocol.converters import get_converter

    from agentls.lsp.services import delivery
    from agentls.lsp.services.retry_offer import offer_retry

    host = ls.engine_if_built()
    assert outcome.outgoing is not None and host is not None  # the action ran on the engine
    sent = await delivery.deliver(ls, host.store, outcome.outgoing)
    if sent.retryable:
        title = outcome.spec.title if outcome.spec is not None else "AgentLS"

        async def retry() -> None:
            document = ls.workspace.text_documents.get(data.uri)
            version = document.version if document is not None else None
            convert = get_converter().unstructure
            await run_action_command(ls, feature, [{
                "uri": data.uri, "range": convert(data.range), "version": version,
                "action": data.action, "title": data.title,
                "diagnostics": [convert(d) for d in data.diagnostics]}])

        offer_retry(ls, f"{title}: not applied: {sent.failure_reason}.", retry)
    elif not sent.sent and sent.message:  # the editor cannot receive edits at all
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                     message=sent.message))
    return bool(sent.applied), sent.failure_reason


async def _show_explanation(ls: ServerContext, outcome: ActionOutcome) -> None:
    assert outcome.explanation is not None
    window = ls.client_capabilities.window
    if window is not None and window.show_document is not None and window.show_document.support:
        shown = await ls.window_show_document_async(lsp.ShowDocumentParams(
            uri=outcome.explanation.as_uri(), take_focus=True))
        if shown.success:
            return
    text = outcome.text.strip() or "(no explanation)"
    ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Info,
                                                 message=f"{outcome.label}\n\n{text}"))


def _check_actions(raw: Any) -> list[str]:
    return parse_user_actions(raw)[1]


def setup(server: ServerContext) -> None:
    feature = CodeActions(server)
    lsp_settings.register_client_section(ACTIONS_SETTING, _check_actions)
    server.settings_listeners.append(feature.reload)

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
        code_action_kinds=list(ADVERTISED_KINDS), resolve_provider=True))
    def code_action(ls: ServerContext, params: lsp.CodeActionParams
                    ) -> Generator[Any, Any, list[lsp.CodeAction] | None]:
        # Not async: the listing never waits, and a coroutine's extra task and loop turns
        # were a third of its latency (bench_lsp). pygls resumes a generator after what it
        # yields, which only happens before the settings first load: the listing needs only
        # the user actions of the client's section, not the engine settings built from it.
        if ls.resolved is None:
            if ls.fetched_client is None:
                yield ls.client_section, (), {}
            feature.reload()
        return feature.list(params)

    @server.feature(lsp.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: ServerContext,
                                  params: lsp.CodeAction) -> lsp.CodeAction:
        try:
            return await resolve_action(ls, feature, params)
        except Exception:  # the person gets the action back unresolved, and why
            log.exception("codeAction/resolve failed")
            ls.window_show_message(lsp.ShowMessageParams(
                type=lsp.MessageType.Error,
                message=f"{params.title} failed unexpectedly; see the AgentLS log."))
            return params

    async def run_action(ls: ServerContext, arguments: list[Any]) -> dict[str, Any]:
        return await run_action_command(ls, feature, arguments)

    register_command(server, RUN_ACTION_COMMAND, run_action)
