"""AgentLS's own LSP methods and commands: names, request parsing, payload shapes.

DESIGN.md's LSP contract, in code. Clients (VS Code, Neovim, tests) depend on these names and
shapes; change them only together with both clients. Payload keys are camelCase like the rest
of LSP. Parsing raises ``ParamsError`` with a message the client author can act on.

This module is imported at server start-up: standard library and lsprotocol only.
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
    stopReason: str  # done | max_iterations | timeout | cancelled | no_progress | error
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


@dataclass(frozen=True)
class ChatParams:
    prompt: str
    session_id: str | None = None
    context: ChatContext = ChatContext()
    work_done_token: str | int | None = None


def plain(value: Any) -> Any:
    """JSON-like data as dicts and lists (pygls may hand custom params over as namedtuples)."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


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
    return ChatParams(prompt, session_id, context, token)


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
