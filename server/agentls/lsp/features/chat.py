"""Chat: ``agentls/chat``, ``agentls/cancel``, ``agentls/sessions``, ``agentls/history``.

The same as ``workspace/executeCommand`` commands: ``agentls.chat`` takes the
``agentls/chat`` params as its one argument and answers at once ``{sessionId, runId,
started: true}``; the run goes on in the background (DESIGN.md 13: an editor without our
plugin, eglot with its 10 s request timeout, never waits on it) and reports through
``$/progress``, ``workspace/applyEdit`` and, at its end, one ``window/showMessage`` with the
answer and what became of the edit. ``agentls.cancel`` takes ``{runId}`` (or the id);
``agentls.newSession`` takes an optional ``{title}`` and returns ``{sessionId}``. The
request ``agentls/chat`` (our plugins' form) still answers when the run is over, with the
result they draw the edit's outcome from.

``agentls/chat`` runs one turn (lsp/services/runs.py) with the context the client sent: the document
and range become the selection (the range's text read from the open buffer), attached
files and diagnostics go along. Events stream as ``agentls/chatEvent``; the response comes
when the run is over: ``{sessionId, runId, text, stopReason, changes, applied}``.
A session created here is a row of ``.agentls/state.db``, the one the CLI reads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentls.engine.run_request import RunRequest
from agentls.lsp.services import documents, protocol, protocol_params
from agentls.lsp.services.commands import register_command
from agentls.lsp.services.handlers import request, single_argument
from agentls.lsp.services.protocol import ChatResult, ParamsError
from agentls.lsp.services.protocol_params import ChatContext, ChatParams
from agentls.lsp.services.server_context import ServerContext
from agentls.lsp.services.turn import TurnRefused, TurnRequest

if TYPE_CHECKING:
    from agentls.engine.host import EngineHost
    from agentls.engine.prompt.levels import Attachments
    from agentls.engine.prompt.references import Reference, ResolvedContext
    from agentls.engine.sessions.store import StoredMessage

log = logging.getLogger(__name__)

_SEVERITIES = {1: "error", 2: "warning", 3: "information", 4: "hint"}


def attachments_for(ls: ServerContext, context: ChatContext) -> Attachments | None:
    """The engine's level-4 attachments for a chat context (paths as the editor gave them)."""
    from agentls.engine.prompt.levels import Attachments, Diagnostic, Selection

    selection: Selection | None = None
    files = [_path_or_uri(uri) for uri in context.files]
    if context.uri is not None:
        path = _path_or_uri(context.uri)
        if context.range is None:
            files.insert(0, path)
        else:
            start, end = context.range.start, context.range.end
            last = end.line if end.character == 0 and end.line > start.line else end.line + 1
            selection = Selection(path, start.line + 1, max(last, start.line + 1),
                                  _range_text(ls, context))
    diagnostics = [
        Diagnostic(_path_or_uri(d.uri), d.line + 1, d.message,
                   _SEVERITIES.get(d.severity or 1, "error"), d.character + 1, d.source, d.code)
        for d in context.diagnostics
    ]
    attachments = Attachments(selection, tuple(dict.fromkeys(files)), tuple(diagnostics))
    return attachments if attachments else None


def _path_or_uri(uri: str) -> str:
    path = documents.path_of(uri)
    return str(path) if path is not None else uri


def _range_text(ls: ServerContext, context: ChatContext) -> str:
    assert context.uri is not None and context.range is not None
    try:  # the open buffer if there is one, else the file on disk
        return ls.workspace.get_text_document(context.uri).text_in_client_range(context.range)
    except (OSError, UnicodeDecodeError, IndexError) as exc:
        log.info("could not read the selection in %s: %s", context.uri, exc)
        return ""


def engine_references(ls: ServerContext,
                      refs: tuple[protocol_params.ContextReference, ...]) -> list[Reference]:
    """The client's references as the engine resolves them (selections read from the buffer)."""
    from agentls.engine.prompt.levels import Diagnostic
    from agentls.engine.prompt.references import Reference

    out = []
    for ref in refs:
        if ref.kind == "selection" and ref.range is not None:
            start, end = ref.range.start, ref.range.end
            last = end.line if end.character == 0 and end.line > start.line else end.line + 1
            text = _range_text(ls, ChatContext(ref.target, ref.range))
            out.append(Reference("selection", _path_or_uri(ref.target), start.line + 1,
                                 max(last, start.line + 1), text))
        elif ref.kind == "diagnostics":
            out.append(Reference("diagnostics", _path_or_uri(ref.target) if ref.target else "",
                                 diagnostics=tuple(
                Diagnostic(_path_or_uri(d.uri), d.line + 1, d.message,
                           _SEVERITIES.get(d.severity or 1, "error"), d.character + 1, d.source,
                           d.code) for d in ref.diagnostics)))
        elif ref.kind in ("file", "buffer"):
            out.append(Reference(ref.kind, _path_or_uri(ref.target)))  # type: ignore[arg-type]
        else:
            out.append(Reference(ref.kind, ref.target))  # type: ignore[arg-type]
    return out


async def resolve_references(ls: ServerContext, host: EngineHost, base: Attachments | None,
                             refs: tuple[protocol_params.ContextReference, ...]) -> ResolvedContext:
    """The turn's attachments and chips: ``base`` (the older ``context``) plus ``refs``."""
    from agentls.engine.prompt import references

    workspace = ls.new_workspace()
    diff: str | None = None
    unavailable = ""
    if any(r.kind == "changes" for r in refs):
        try:
            diff = await references.uncommitted_diff(workspace)
        except references.ChangesUnavailable as exc:
            unavailable = str(exc)

    def changes() -> str:
        if diff is None:
            raise references.ChangesUnavailable(unavailable)
        return diff

    return await asyncio.to_thread(
        references.resolve, engine_references(ls, refs), workspace, base=base,
        symbols=lambda: host.agent.search_hub.get(workspace), changes=changes)


async def run_chat(ls: ServerContext, params: ChatParams,
                   run_id: str | None = None) -> ChatResult:
    """One chat turn, for ``agentls/chat`` and the ``agentls.chat`` command (which names
    the run, ``run_id``, before it starts): the prompt and its context become the engine's
    ``RunRequest`` here, once."""
    host = await ls.engine()  # loads the engine (in a thread) before the context is built
    session_id = params.session_id
    if params.model is not None or params.mode is not None or params.backend is not None:
        session_id = await _apply_options(ls, host, params)
    attachments = attachments_for(ls, params.context)
    chips: list[Any] = []
    refused: list[Any] = []
    if params.references:
        resolved = await resolve_references(ls, host, attachments, params.references)
        attachments = resolved.attachments or None
        chips, refused = resolved.chips, resolved.refused
    run = RunRequest(params.prompt, attachments=attachments, chips=chips, refused=refused)
    request = TurnRequest(run, session_id=session_id, work_done_token=params.work_done_token,
                          run_id=run_id)
    turn = await ls.runs.run(request, host)  # the engine, awaited once above
    return turn.chat_result()


async def _apply_options(ls: ServerContext, host: EngineHost, params: ChatParams) -> str:
    """The session of a chat that names a model or mode: switched to them (created first
    when the chat starts a new session)."""
    from agentls.engine import model_choice as models
    from agentls.engine import modes
    from agentls.engine.sessions.store import SessionNotFound, title_from

    settings = host.agent.settings
    session_id = params.session_id
    try:
        if params.mode is not None:
            modes.get(params.mode)  # an unknown mode refuses the chat before a session exists
        if params.model is not None or params.backend is not None:
            current = host.store.get_session(session_id) if session_id else None
            backend = params.backend or (current.backend if current else settings.backend)
            config = settings.backends.get(backend)
            model = params.model or (config.model if config else "")
            listing = await models.list_models(settings, only=backend)
            models.check_model(listing, backend, model)
        if session_id is None:
            session_id = host.store.create_session(
                backend=settings.backend, model=settings.active_backend.model,
                title=title_from(params.prompt)).id
        if params.model is not None or params.backend is not None:
            models.set_session_model(host.store, session_id, backend, model)
        if params.mode is not None:
            modes.set_session_mode(host.store, session_id, params.mode)
    except (modes.UnknownMode, models.UnknownModel, SessionNotFound) as exc:
        raise TurnRefused(str(exc), code=protocol.INVALID_PARAMS) from None
    return session_id


def session_payload(info: Any) -> protocol.SessionPayload:
    return {"id": info.id, "title": info.title, "createdAt": info.created_at,
            "updatedAt": info.updated_at, "backend": info.backend, "model": info.model,
            "mode": info.mode, "messageCount": info.message_count}


def message_payload(stored: StoredMessage) -> protocol.HistoryMessagePayload:
    from agentls.engine import review_notes as notes

    message = stored.message
    out: protocol.HistoryMessagePayload = {
        "id": stored.id, "seq": stored.seq, "kind": stored.kind, "role": message.role,
        "content": message.content, "createdAt": stored.created_at,
        "metadata": stored.metadata,
    }
    if message.role == "user" and stored.kind == "message":
        told, own = notes.display(message.content or "", stored.metadata)
        if told:
            out["notes"], out["content"] = told, own
    if message.tool_calls:
        out["toolCalls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments}
                            for c in message.tool_calls]
    if message.tool_call_id:
        out["toolCallId"] = message.tool_call_id
    if message.role == "tool" and message.name:
        out["toolName"] = message.name
    return out


async def new_session_command(ls: ServerContext,
                              arguments: list[Any]) -> dict[str, str]:
    options = protocol.plain(arguments[0]) if arguments else {}
    title = options.get("title") if isinstance(options, dict) else None
    if title is not None and not isinstance(title, str):
        raise ParamsError(f"{protocol.CMD_NEW_SESSION} takes an optional " '{"title": "..."}')
    host = await ls.engine()
    settings = host.agent.settings
    info = host.store.create_session(backend=settings.backend,
                                     model=settings.active_backend.model, title=title)
    return {"sessionId": info.id}


async def chat_command(ls: ServerContext, arguments: list[Any]) -> dict[str, Any]:
    """``agentls.chat``: answers at once ``{sessionId, runId, started: true}``; the turn goes
    on in the background (see the module's docstring). Bad params, and an unknown session once
    the engine is loaded, are refused in the answer; while the server is still starting (its
    first second) the answer has no ``sessionId`` and the turn opens its session itself."""
    import uuid

    params = protocol_params.parse_chat_params(
        single_argument(protocol.CMD_CHAT, protocol.CHAT)(arguments))
    host = ls.engine_if_built()  # never awaited: the start-up work may take a second
    if host is not None:
        params = _with_session(host, params)
    run_id = uuid.uuid4().hex[:12]
    ls.spawn(_chat_in_background(ls, params, run_id))
    out: dict[str, Any] = {"runId": run_id, "started": True}
    if params.session_id is not None:
        out["sessionId"] = params.session_id
    return out


def _with_session(host: EngineHost, params: ChatParams) -> ChatParams:
    """``params`` with their session checked, or a new one created (so the command's answer
    names it and a follow-up can continue it)."""
    import dataclasses

    from agentls.engine.sessions.store import SessionNotFound, title_from

    if params.session_id is not None:
        if host.store.get_session(params.session_id) is None:
            raise TurnRefused(str(SessionNotFound(params.session_id)),
                              code=protocol.INVALID_PARAMS)
        return params
    settings = host.agent.settings
    return dataclasses.replace(params, session_id=host.store.create_session(
        backend=settings.backend, model=settings.active_backend.model,
        title=title_from(params.prompt)).id)


async def _chat_in_background(ls: ServerContext, params: ChatParams, run_id: str) -> None:
    """The command's turn, after its answer; its end (or why it could not run) is told with
    window/showMessage, the one thing every LSP editor shows."""
    from lsprotocol import types as lsp

    try:
        result = await run_chat(ls, params, run_id=run_id)
    except TurnRefused as exc:  # a full queue, an unknown model or mode ...
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error,
                                                     message=exc.message))
        return
    except Exception:
        log.exception("agentls.chat failed")
        ls.window_show_message(lsp.ShowMessageParams(
            type=lsp.MessageType.Error,
            message="AgentLS: the chat failed unexpectedly; see the AgentLS log."))
        return
    kind, message = ended_message(result, _display(ls))
    ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType(kind), message=message))


ANSWER_SHOWN_CHARS = 2000  # of the answer in the closing message; the session has it whole


def _display(ls: ServerContext) -> Callable[[str], str]:
    workspace = ls.new_workspace()

    def display(uri: str) -> str:
        path = documents.path_of(uri)
        return workspace.display_path(path) if path is not None else uri

    return display


def ended_message(result: ChatResult, display: Callable[[str], str]) -> tuple[int, str]:
    """``(MessageType, text)`` saying how a turn run by the command ended: the answer, then
    what became of its edit (never "applied" for what did not land)."""
    lines: list[str] = []
    text = result.get("text", "").strip()
    if len(text) > ANSWER_SHOWN_CHARS:
        text = text[: ANSWER_SHOWN_CHARS - 1] + "…"
    if text:
        lines.append(text)
    applied, reason = result.get("applied"), result.get("failureReason")
    files = ", ".join(display(c["uri"]) for c in result.get("changes", []))
    kind = 3  # Info
    if applied is True:
        lines.append(f"Edit applied: {files}.")
    elif applied is False and result.get("partial"):
        lines.append(f"Edit partly applied: {reason or 'some of it was kept'}.")
    elif applied is False:
        lines.append(f"Edit not applied{f' ({reason})' if reason else ''}: {files} left "
                     "unchanged.")
        kind = 2  # Warning
    stop = result.get("stopReason", "done")
    error = result.get("error")
    if error is not None:
        lines.append(f"Error: {error['message']}" + (f" ({error['hint']})"
                                                     if error.get("hint") else ""))
        kind = 1  # Error
    elif stop != "done":
        lines.append(f"Stopped: {stop.replace('_', ' ')}.")
    return kind, "AgentLS: " + "\n\n".join(lines or ["(no answer)"])


def setup(server: ServerContext) -> None:
    @request(server, protocol.CHAT)
    async def chat(ls: ServerContext, params: Any) -> ChatResult:
        return await run_chat(ls, protocol_params.parse_chat_params(params))

    register_command(server, protocol.CMD_CHAT, chat_command)

    # agentls.cancel takes {runId} or the id itself as its argument.
    @request(server, protocol.CANCEL, command=protocol.CMD_CANCEL, command_params=list)
    async def cancel(ls: ServerContext, params: Any) -> dict[str, bool]:
        return {"cancelled": ls.runs.cancel(protocol_params.parse_run_id(params))}

    @request(server, protocol.SESSIONS)
    async def sessions(ls: ServerContext, params: Any) -> dict[str, Any]:
        limit = protocol_params.parse_limit(params)
        host = await ls.engine()
        return {"sessions": [session_payload(s) for s in host.store.list_sessions(limit)]}

    @request(server, protocol.HISTORY)
    async def history(ls: ServerContext, params: Any) -> dict[str, Any]:
        session_id = protocol_params.parse_session_id(params)
        host = await ls.engine()
        # Imported once the engine is: never on the event loop while the start-up thread
        # imports the same modules (two threads importing one package can deadlock).
        from agentls.engine.sessions.store import SessionNotFound

        if host.store.get_session(session_id) is None:
            raise ParamsError(str(SessionNotFound(session_id)))
        # A long session is megabytes of stored messages: read them off the event loop.
        stored = await asyncio.to_thread(host.store.history, session_id)
        return {"sessionId": session_id, "messages": [message_payload(m) for m in stored]}

    register_command(server, protocol.CMD_NEW_SESSION, new_session_command)
