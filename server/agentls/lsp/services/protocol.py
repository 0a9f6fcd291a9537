"""AgentLS's own LSP methods and commands: names, request parsing, payload shapes.

DESIGN.md's LSP contract, in code. Clients (VS Code, Neovim, tests) depend on these names and
shapes; change them only together with both clients. Payload keys are camelCase like the rest
of LSP. Parsing raises ``ParamsError`` with a message the client author can act on.

This module is imported at server start-up: standard library and lsprotocol only. At ~500
lines it stays one: it is the contract, every method and payload in one place for client
authors to read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from lsprotocol import types as lsp

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


# --- requests from the client -------------------------------------------------------------


@dataclass(frozen=True)
class ContextDiagnostic:
    """A diagnostic the client attached, in LSP terms (0-based positions)."""

    uri: str
    line: int
    character: int
    message: str
    severity: int | None = None  # lsp.DiagnosticSeverity value, 1 = error
    source: str | None = None
    code: str | None = None


@dataclass(frozen=True)
class ChatContext:
    uri: str | None = None
    range: lsp.Range | None = None
    files: tuple[str, ...] = ()
    diagnostics: tuple[ContextDiagnostic, ...] = ()


REFERENCE_KINDS = ("file", "buffer", "selection", "diagnostics", "changes", "symbol", "url")


@dataclass(frozen=True)
class ContextReference:
    """One thing the person pointed at (``@file``, ``#buffer``, ``#selection`` ...); the
    server resolves it (engine/prompt/references.py). Wire shapes, by ``kind``:

    - ``{"kind": "file", "uri": "file:///..."}`` or ``{"kind": "file", "path": "src/a.py"}``
    - ``{"kind": "buffer", "uri": ...}``: the editor's current buffer (its unsaved text)
    - ``{"kind": "selection", "uri": ..., "range": Range}``: the text is read from the buffer
    - ``{"kind": "diagnostics", "uri"?: ..., "diagnostics": [Diagnostic (+ "uri")]}``
    - ``{"kind": "changes"}``: the uncommitted changes (``git diff HEAD``)
    - ``{"kind": "symbol", "name": "parse_config"}``: through the workspace's search index
    - ``{"kind": "url", "url": "https://..."}``: refused with the reason (no network)
    """

    kind: str
    target: str = ""
    range: lsp.Range | None = None
    diagnostics: tuple[ContextDiagnostic, ...] = ()


@dataclass(frozen=True)
class ChatParams:
    prompt: str
    session_id: str | None = None
    context: ChatContext = ChatContext()
    work_done_token: str | int | None = None
    references: tuple[ContextReference, ...] = ()
    model: str | None = None  # switch the session to it before this turn
    backend: str | None = None
    mode: str | None = None  # ask | edit | agent (engine/modes.py)


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


def parse_chat_params(raw: Any) -> ChatParams:
    data = _object(plain(raw), "agentls/chat params")
    prompt = data.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ParamsError("agentls/chat needs a non-empty 'prompt' string, e.g. "
                          '{"prompt": "explain this function"}')
    session_id = _optional_str(data, "sessionId")
    token = data.get("workDoneToken")
    if token is not None and (isinstance(token, bool) or not isinstance(token, str | int)):
        raise ParamsError("'workDoneToken' must be a string or an integer")
    context = _parse_context(data.get("context"))
    raw_refs = data.get("references") or []
    if not isinstance(raw_refs, list):
        raise ParamsError("'references' must be a list of references, e.g. "
                          '[{"kind": "file", "path": "src/a.py"}]')
    references = tuple(parse_reference(r, f"references[{i}]") for i, r in enumerate(raw_refs))
    return ChatParams(prompt, session_id, context, token, references,
                      _optional_str(data, "model"), _optional_str(data, "backend"),
                      _optional_str(data, "mode"))


def parse_reference(raw: Any, where: str = "reference") -> ContextReference:
    data = _object(plain(raw), where)
    kind = data.get("kind")
    if kind not in REFERENCE_KINDS:
        raise ParamsError(f"{where}.kind must be one of {', '.join(REFERENCE_KINDS)}")
    if kind in ("file", "buffer", "selection"):
        target = data.get("uri") or data.get("path")
        if not isinstance(target, str) or not target:
            raise ParamsError(f"{where} ({kind}) needs a 'uri' or a 'path'")
        rng = None
        if kind == "selection":
            rng = _parse_range(data.get("range"), f"{where}.range")
        return ContextReference(kind, target, rng)
    if kind == "diagnostics":
        uri = data.get("uri")
        if uri is not None and (not isinstance(uri, str) or not uri):
            raise ParamsError(f"{where}.uri must be a document URI")
        items = data.get("diagnostics") or []
        if not isinstance(items, list):
            raise ParamsError(f"{where}.diagnostics must be a list of LSP Diagnostic objects")
        return ContextReference(kind, uri or "", None, tuple(
            _parse_diagnostic(d, uri, i) for i, d in enumerate(items)))
    if kind == "changes":
        return ContextReference(kind)
    key = "name" if kind == "symbol" else "url"
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ParamsError(f"{where} ({kind}) needs a non-empty '{key}'")
    return ContextReference(kind, value.strip())


def parse_turns_params(raw: Any) -> tuple[str, int, int | None]:
    """``{sessionId, limit?, before?}`` of agentls/turns."""
    data = _object(plain(raw), "agentls/turns params")
    session_id = data.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        raise ParamsError('agentls/turns needs {"sessionId": "<id>"}; list ids with '
                          "agentls/sessions")
    limit = data.get("limit", 50)
    before = data.get("before")
    for name, value in (("limit", limit), ("before", before)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < (1 if name == "limit" else 0)):
            least = "positive" if name == "limit" else "non-negative"
            raise ParamsError(f"'{name}' must be a {least} integer")
    return session_id, int(limit), before


def parse_models_params(raw: Any) -> tuple[str | None, bool]:
    """``{sessionId?, probe?: true}`` of agentls/models (``probe: false``: no network)."""
    data = plain(raw) if raw is not None else {}
    data = _object({} if data == [] else data, f"{MODELS} params")  # a Lua {} can be []
    session_id = _optional_str(data, "sessionId")
    probe = data.get("probe", True)
    if not isinstance(probe, bool):
        raise ParamsError(f"{MODELS}: 'probe' must be true or false")
    return session_id or None, probe


def parse_session_option(raw: Any, method: str, key: str) -> tuple[str, str, str | None]:
    """``{sessionId, <key>, backend?}`` of agentls/setModel and agentls/setMode."""
    data = _object(plain(raw), f"{method} params")
    session_id = data.get("sessionId")
    value = data.get(key)
    if not isinstance(session_id, str) or not session_id or not isinstance(value, str) \
            or not value:
        raise ParamsError(f'{method} needs {{"sessionId": "<id>", "{key}": "<{key}>"}}; '
                          f"list them with {MODELS}")
    return session_id, value, _optional_str(data, "backend")


def parse_mentions_params(raw: Any) -> tuple[str, tuple[str, ...], int]:
    data = _object(plain(raw) if raw is not None else {}, "agentls/mentions params")
    query = data.get("query", "")
    if not isinstance(query, str):
        raise ParamsError("agentls/mentions: 'query' must be a string (may be empty)")
    kinds = data.get("kinds") or list(REFERENCE_KINDS)
    if not isinstance(kinds, list) or any(k not in REFERENCE_KINDS for k in kinds):
        raise ParamsError("agentls/mentions: 'kinds' must list some of "
                          + ", ".join(REFERENCE_KINDS))
    limit = data.get("limit", 50)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ParamsError("'limit' must be a positive integer")
    return query, tuple(kinds), min(int(limit), 500)


def parse_run_id(raw: Any) -> str:
    """``{runId}`` (or the bare id, as a command argument)."""
    value = plain(raw)
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, str) and value:
        return value
    if isinstance(value, Mapping) and isinstance(value.get("runId"), str) and value["runId"]:
        return str(value["runId"])
    raise ParamsError('agentls/cancel needs {"runId": "<id>"}; the id is in every '
                      "agentls/chatEvent and in the agentls/chat result")


def parse_session_id(raw: Any) -> str:
    data = _object(plain(raw), "agentls/history params")
    session_id = data.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        raise ParamsError('agentls/history needs {"sessionId": "<id>"}; list ids with '
                          "agentls/sessions")
    return session_id


def parse_limit(raw: Any, default: int = 50) -> int:
    data = plain(raw)
    if data is None:
        return default
    limit = _object(data, "agentls/sessions params").get("limit", default)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ParamsError("'limit' must be a positive integer")
    return int(limit)


def _parse_context(raw: Any) -> ChatContext:
    if raw is None:
        return ChatContext()
    data = _object(raw, "'context'")
    uri = _optional_str(data, "uri")
    rng = _parse_range(data["range"], "context.range") if data.get("range") is not None else None
    if rng is not None and uri is None:
        raise ParamsError("context.range needs context.uri: the document the range is in")
    files = data.get("files") or []
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        raise ParamsError("context.files must be a list of document URIs")
    raw_diagnostics = data.get("diagnostics") or []
    if not isinstance(raw_diagnostics, list):
        raise ParamsError("context.diagnostics must be a list of LSP Diagnostic objects")
    diagnostics = tuple(_parse_diagnostic(d, uri, i) for i, d in enumerate(raw_diagnostics))
    return ChatContext(uri, rng, tuple(files), diagnostics)


def _parse_diagnostic(raw: Any, default_uri: str | None, index: int) -> ContextDiagnostic:
    where = f"context.diagnostics[{index}]"
    data = _object(raw, where)
    uri = data.get("uri", default_uri)
    if not isinstance(uri, str) or not uri:
        raise ParamsError(f"{where} needs a 'uri', or context.uri must be set")
    message = data.get("message")
    if not isinstance(message, str):
        raise ParamsError(f"{where}.message must be a string")
    start = _parse_range(data.get("range"), f"{where}.range").start
    severity = data.get("severity")
    if severity is not None and (isinstance(severity, bool) or not isinstance(severity, int)):
        raise ParamsError(f"{where}.severity must be 1 (error) to 4 (hint)")
    source = data.get("source")
    code = data.get("code")
    return ContextDiagnostic(
        uri, start.line, start.character, message, severity,
        source if isinstance(source, str) else None,
        str(code) if isinstance(code, str | int) and not isinstance(code, bool) else None,
    )


def _parse_range(raw: Any, where: str) -> lsp.Range:
    data = _object(raw, where)
    return lsp.Range(_parse_position(data.get("start"), f"{where}.start"),
                     _parse_position(data.get("end"), f"{where}.end"))


def _parse_position(raw: Any, where: str) -> lsp.Position:
    data = _object(raw, where)
    line, character = data.get("line"), data.get("character")
    for name, value in (("line", line), ("character", character)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ParamsError(f"{where}.{name} must be a non-negative integer")
    return lsp.Position(line=int(line), character=int(character))  # type: ignore[arg-type]


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ParamsError(f"{where} must be a JSON object")
    return value


def _optional_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ParamsError(f"'{key}' must be a non-empty string")
    return value


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


# --- text the person proposes from the chat (a code block's Apply) ------------------------

PROPOSE_EDIT = "agentls/proposeEdit"  # {sessionId, uri, range, text} -> {applied, failureReason?}


def parse_propose_edit(raw: Any) -> tuple[str, str, lsp.Range, str]:
    data = _object(plain(raw), f"{PROPOSE_EDIT} params")
    session_id, uri, text = data.get("sessionId"), data.get("uri"), data.get("text")
    if not isinstance(session_id, str) or not session_id or not isinstance(uri, str) \
            or not uri or not isinstance(text, str):
        raise ParamsError(f'{PROPOSE_EDIT} needs {{"sessionId": "<the chat\'s session>", '
                          '"uri": "<document>", "range": <Range>, "text": "<the replacement>"}')
    return session_id, uri, _parse_range(data.get("range"), "range"), text


def parse_next_edit_params(raw: Any, method: str) -> tuple[str, int | None, int, int]:
    """``{textDocument: {uri, version}, position: {line, character}}`` as (uri, version,
    line, character)."""
    data = _object(plain(raw), f"{method} params")
    document = data.get("textDocument")
    position = data.get("position")
    example = ('{"textDocument": {"uri": "file:///a.py", "version": 3}, '
               '"position": {"line": 1, "character": 2}}')
    if not isinstance(document, dict) or not isinstance(document.get("uri"), str):
        raise ParamsError(f"{method} needs 'textDocument' with a 'uri', e.g. {example}")
    version = document.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise ParamsError(f"{method}: 'textDocument.version' must be an integer")
    if not isinstance(position, dict) or not all(
            isinstance(position.get(k), int) and not isinstance(position.get(k), bool)
            for k in ("line", "character")):
        raise ParamsError(f"{method} needs 'position' with integer 'line' and 'character', "
                          f"e.g. {example}")
    return document["uri"], version, position["line"], position["character"]


def inline_edit_id(raw: Any) -> str | None:
    """The suggestion id in ``didShowInlineEdit``'s ``{item: {command: {arguments: [id]}}}``
    (None when it is not there)."""
    data = plain(raw)
    item = data.get("item") if isinstance(data, dict) else None
    command = item.get("command") if isinstance(item, dict) else None
    arguments = command.get("arguments") if isinstance(command, dict) else None
    if isinstance(arguments, list) and arguments and isinstance(arguments[0], str):
        return arguments[0]
    return None
