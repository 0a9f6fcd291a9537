"""AgentLS's own LSP methods and commands: names, errors, the payloads sent to the client
and the chat events.

DESIGN.md's LSP contract, in code. Clients (VS Code, Neovim, tests) depend on these names and
shapes; change them only together with both clients. Payload keys are camelCase like the rest
of LSP. The requests' parameters and their parsing are ``protocol_params.py`` (it raises
``ParamsError``, defined here, with a message the client author can act on).

This module is imported at server start-up: standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypedDict

# --- methods ------------------------------------------------------------------------------

CHAT = "agentls/chat"
CANCEL = "agentls/cancel"
SESSIONS = "agentls/sessions"
HISTORY = "agentls/history"
CHAT_EVENT = "agentls/chatEvent"  # server -> client notification
COMPLETION_STATUS = "agentls/completionStatus"  # server -> client: {status, message}
# Next-edit suggestions (issue 42): Copilot's method as copilot-lsp and others send it, ours.
COPILOT_INLINE_EDIT = "textDocument/copilotInlineEdit"  # {textDocument{uri, version}, position}
NEXT_EDIT = "agentls/nextEdit"  # the same params -> the same {edits: [...]}
DID_SHOW_INLINE_EDIT = "textDocument/didShowInlineEdit"  # {item: {command: {arguments: [id]}}}
DID_FOCUS = "textDocument/didFocus"  # copilot-lsp's {textDocument: {uri}} on entering a buffer
NEXT_EDIT_STATUS = "agentls/nextEditStatus"  # server -> client: {status, message}
CMD_NEXT_EDIT_ACCEPT = "agentls.nextEdit.accept"  # arguments: [id] (the edit's command)
CMD_NEXT_EDIT_REJECT = "agentls.nextEdit.reject"  # arguments: [id]: dismissed by the person
# The conversation (issue 29): models and modes per session, display-ready history, mentions.
MODELS = "agentls/models"  # {sessionId?, probe?} -> ModelsResult
SET_MODEL = "agentls/setModel"  # {sessionId, model, backend?} -> SessionOptionsResult
SET_MODE = "agentls/setMode"  # {sessionId, mode} -> SessionOptionsResult
TURNS = "agentls/turns"  # {sessionId, limit?, before?} -> TurnsResult
MENTIONS = "agentls/mentions"  # {query, kinds?, limit?} -> {items: [MentionItem]}
# Text the person proposes from the chat (a code block's Apply).
PROPOSE_EDIT = "agentls/proposeEdit"  # {sessionId, uri, range, text} -> {applied, failureReason?}

# --- commands (workspace/executeCommand) ------------------------------------------------

CMD_CHAT = "agentls.chat"
CMD_CANCEL = "agentls.cancel"
CMD_NEW_SESSION = "agentls.newSession"
CMD_COMMIT_MESSAGE = "agentls.commitMessage"
CMD_PR_DESCRIPTION = "agentls.prDescription"
CMD_RUN_ACTION = "agentls.runAction"

# --- errors -------------------------------------------------------------------------------

INVALID_PARAMS = -32602
REQUEST_FAILED = -32803  # LSPErrorCodes.RequestFailed: valid request, could not be served


class ParamsError(ValueError):
    """A request's parameters do not have the contract's shape."""


# --- payloads sent to the client ----------------------------------------------------------


class FileChangePayload(TypedDict, total=False):
    uri: str
    kind: str  # create | update | delete | rename
    insertions: int
    deletions: int
    oldUri: str  # renames only


class ErrorPayload(TypedDict, total=False):
    message: str
    kind: str  # a BackendError kind, or timeout / stale / no_workspace / ...
    hint: str


class ChatResult(TypedDict, total=False):
    sessionId: str
    runId: str
    text: str
    stopReason: str  # done | max_iterations | timeout | cancelled | no_progress | error |
    # max_tokens | refusal
    changes: list[FileChangePayload]
    applied: bool | None  # None: nothing was sent to the editor
    failureReason: str
    partial: bool  # some of the edit was kept, some not: failureReason says what
    error: ErrorPayload


class SessionPayload(TypedDict):
    id: str
    title: str | None
    createdAt: float
    updatedAt: float
    backend: str
    model: str
    mode: str
    messageCount: int


class HistoryMessagePayload(TypedDict, total=False):
    id: int
    seq: int
    kind: str  # message | summary | actions
    role: str
    content: str | None
    toolCalls: list[dict[str, str]]
    toolCallId: str
    toolName: str
    createdAt: float
    metadata: dict[str, Any]
    notes: list[str]  # user messages: what AgentLS told the model first (engine/notes.py)


class ChipPayload(TypedDict, total=False):
    kind: str  # file | buffer | selection | diagnostics | changes | symbol
    name: str
    lines: int
    size: int  # bytes
    range: str  # "12-30" (selection, symbol)
    note: str  # trimmed, and how


class RefusedPayload(TypedDict):
    kind: str
    name: str
    reason: str


class ToolCallStepPayload(TypedDict):
    kind: str  # "toolCall"
    id: str
    name: str
    arguments: str  # the call's JSON arguments, cut at 300 characters
    ok: bool | None  # None: no result was stored
    summary: str  # "ok (path: a.py)", "NOT_FOUND: ..." (as the live toolResult event)


class TurnUserPayload(TypedDict):
    text: str  # the person's own words, never the prompt AgentLS built around them
    attachments: list[ChipPayload]
    refused: list[RefusedPayload]
    notes: list[str]  # what AgentLS told the model first (a rejected edit ...): not the person's
    trimmed: list[str]  # attachments cut or left out to fit, and why


class TurnPayload(TypedDict, total=False):
    index: int  # 0-based position of the turn in the session
    runId: str | None
    user: TurnUserPayload
    model: str | None  # the model that answered
    backend: str | None
    mode: str | None  # ask | edit | agent
    # In order: {"kind": "text", "text"} | ToolCallStepPayload; the one place a turn's
    # answer and tool calls are (both clients draw the steps).
    steps: list[dict[str, Any]]
    changes: dict[str, Any]  # {"text": "edited a.py (+1 −0)", "applied": bool | None}
    outcome: str | None  # the stop reason; None while running or for an interrupted turn
    startedAt: float
    endedAt: float | None
    durationMs: int | None


class TurnsResult(TypedDict):
    sessionId: str
    turns: list[TurnPayload]  # oldest first
    start: int  # index of turns[0]
    total: int  # turns in the session
    hasMore: bool  # earlier turns exist: ask again with before = start


class ModeOption(TypedDict):
    name: str  # ask | edit | agent
    label: str
    description: str
    writes: bool
    commands: bool


class BackendOption(TypedDict):
    name: str
    type: str  # openai | codex | copilot | claude
    model: str  # the configured model
    models: list[str]  # served (the configured one first)
    status: str  # available | unauthenticated | unreachable | unchecked | cli (not for chat)
    detail: str
    active: bool
    anyModel: bool
    needsKey: bool
    keySet: bool
    baseUrl: str


class ModelsResult(TypedDict, total=False):
    backends: list[BackendOption]
    modes: list[ModeOption]
    defaultMode: str
    session: dict[str, Any]  # {sessionId, backend, model, mode} when sessionId was given


class SessionOptionsResult(TypedDict):
    sessionId: str
    backend: str
    model: str
    mode: str
    running: bool  # a run is on: the change applies from the next turn
    message: str  # one line for the person


class MentionItem(TypedDict, total=False):
    label: str  # what completion inserts after the trigger, e.g. "file:src/a.py"
    kind: str  # a reference kind
    detail: str
    reference: dict[str, Any]  # the ContextReference to send


def plain(value: Any) -> Any:
    """JSON-like data as dicts and lists (pygls may hand custom params over as namedtuples)."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def plain_response(data: Any) -> Any:
    """An answer whose result is plain JSON (AgentLS's own methods), as a dict json encodes
    as it is: pygls would have cattrs walk every value of it first (1,000 turns of history:
    ~250 ms). Anything else is returned unchanged."""
    result = getattr(data, "result", None)
    if isinstance(result, dict) and getattr(data, "id", None) is not None:
        return {"jsonrpc": "2.0", "id": data.id, "result": result}
    return data


# --- chat events --------------------------------------------------------------------------

_CAMEL = re.compile(r"_([a-z])")


def camel(key: str) -> str:
    return _CAMEL.sub(lambda m: m.group(1).upper(), key)


def camel_keys(value: Any) -> Any:
    """Engine event fields (snake_case) as LSP payload keys (camelCase), at any depth."""
    if isinstance(value, Mapping):
        return {camel(str(k)): camel_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [camel_keys(v) for v in value]
    return value


def chat_event(session_id: str, run_id: str, seq: int, kind: str,
               fields: Mapping[str, Any]) -> dict[str, Any]:
    """One ``agentls/chatEvent`` payload: ``{sessionId, runId, seq, kind, ...fields}``."""
    payload: dict[str, Any] = {"sessionId": session_id, "runId": run_id, "seq": seq,
                               "kind": kind}
    for key, value in camel_keys(fields).items():
        if key not in payload:
            payload[key] = value
    return payload

