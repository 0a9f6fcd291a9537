"""AgentLS's own LSP requests as the server reads them: the parameters' shapes
(``ChatParams``, the context and references a chat attaches) and their parsing, next edits'
included. Bad parameters raise ``ParamsError`` with a message the client author can act on;
the names of the methods and the payloads sent back are ``protocol.py``'s (DESIGN.md's LSP
contract).

Imported at server start-up: standard library and lsprotocol only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lsprotocol import types as lsp

from agentls.lsp.services.protocol import MODELS, PROPOSE_EDIT, ParamsError, plain


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



# --- text the person proposes from the chat (a code block's Apply), next edits ------------


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
