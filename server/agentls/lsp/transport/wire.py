"""The stdio wire: framing that resynchronises, and an answer for every request.

pygls 2.1 reads messages in ``pygls.io_.run_async``: a ``Content-Length`` it cannot trust
stalls it (a long one swallows the next message and then waits forever), a body that is not
JSON or params that do not fit the method's type are logged and reported with
``window/showMessage``, but the request is never answered, so the editor waits. This module
replaces that loop, one level above the handlers:

- ``FrameReader`` reads headers case-insensitively, skips bytes that are not a header (and
  logs them) until the next ``Content-Length``, and cuts a body short when its declared
  length runs into the next header or nothing more arrives after a complete JSON value;
  a body that does not end like JSON is searched for the next header's start (a length
  too long by a few bytes ends inside it).
- ``Dispatcher`` checks the JSON-RPC envelope before pygls sees it: ``-32700`` for a body
  that is not JSON (``"id": null``), ``-32600`` for anything that is not a request, notification or
  response, ``-32602`` naming the field when params do not fit the method, and pygls
  answers ``-32601`` for unknown methods. Notifications are never answered: bad ones are
  logged. A ``didChange`` older than the document held is dropped with a log line.
- A client's answer that does not fit the server's request fails that request with the
  reason (it would wait forever); one that comes after the waiter was cancelled is dropped
  with a log line (pygls would raise setting it).

The main loop that reads and dispatches is ``stdio_loop.py``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import select
from collections.abc import Mapping
from concurrent.futures import InvalidStateError as FutureInvalidState
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
)

from agentls.policy.redaction import redact_data

if TYPE_CHECKING:
    from pygls.protocol import JsonRPCProtocol

    from agentls.lsp.server import AgentLanguageServer

log = logging.getLogger(__name__)

MAX_BODY = 512 * 1024 * 1024  # a Content-Length above this is garbage, not a message
IDLE_S = 1.0  # a complete JSON body followed by this much silence ends a too-long frame
_CHUNK = 65536
_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*(\d+)", re.IGNORECASE)
_NAME = b"content-length"
_HEADER = re.compile(rb"^[A-Za-z][A-Za-z0-9-]*[ \t]*:")
_DESCRIBE_LIMIT = 400


class FrameReader:
    """LSP base-protocol frames from a file descriptor, resynchronising after bad framing."""

    def __init__(self, fd: int, idle_s: float = IDLE_S) -> None:
        self._fd = fd
        self._idle_s = idle_s
        self._buf = bytearray()
        self._eof = False

    def _fill(self, timeout: float | None) -> bool:
        """Read what is available; False when nothing arrived within ``timeout``."""
        if timeout is not None:
            ready, _, _ = select.select([self._fd], [], [], timeout)
            if not ready:
                return False
        chunk = os.read(self._fd, _CHUNK)
        if chunk:
            self._buf += chunk
        else:
            self._eof = True
        return True

    def _readline(self) -> bytes | None:
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                line = bytes(self._buf[:end + 1])
                del self._buf[:end + 1]
                return line
            if self._eof:
                if not self._buf:
                    return None
                line = bytes(self._buf)
                self._buf.clear()
                return line
            self._fill(None)

    def next_body(self) -> bytes | None:
        """The next message body; None at the end of the stream."""
        length: int | None = None
        while True:
            line = self._readline()
            if line is None:
                return None
            stripped = line.strip()
            if not stripped:
                if length is not None:
                    return self._read_body(length)
                continue  # a stray blank line between messages
            match = _LENGTH.search(stripped)
            if match is not None:
                if match.start() > 0:
                    log.warning("skipped %d bytes that were not a message before a "
                                "Content-Length header (resynchronised)", match.start())
                declared = int(match.group(1))
                if declared > MAX_BODY:
                    log.error("ignored a Content-Length of %d bytes (over %d): waiting for "
                              "the next header", declared, MAX_BODY)
                    length = None
                else:
                    length = declared
            elif not _HEADER.match(stripped):
                log.warning("skipped %d bytes that were not a message header", len(line))
                length = None

    def _read_body(self, length: int) -> bytes:
        scan = 0
        headers: list[int] = []  # headers inside the declared body after an unreadable start
        while True:
            window = min(len(self._buf), length)
            header = _LENGTH.search(self._buf, scan, window)
            if header is not None and _json_end(self._buf[:header.start()]) is not None:
                return self._short_body(length, header.start(), "the next header began")
            if header is not None:
                headers.append(header.start())
            scan = max(0, window - 24)
            if len(self._buf) >= length or self._eof:
                break
            if not self._fill(self._idle_s):
                if _json_end(self._buf) is not None:
                    return self._short_body(length, len(self._buf), "nothing more arrived")
                # An unreadable body whose declared length waits for bytes that do not come,
                # while a whole well-formed message follows it: that message is not swallowed.
                framed = next((at for at in headers if self._whole_frame_at(at)), None)
                if framed is not None:
                    return self._short_body(length, framed,
                                            "a whole message followed and nothing more came")
        if len(self._buf) < length:
            log.error("the stream ended %d bytes into a %d-byte message",
                      len(self._buf), length)
        elif not bytes(self._buf[max(0, length - 64):length]).rstrip().endswith((b"}", b"]")):
            inside = self._header_inside(length)
            if inside is not None:
                return self._short_body(length, inside, "the next header began inside it")
        body = bytes(self._buf[:length])
        del self._buf[:length]
        return body

    def _whole_frame_at(self, at: int) -> bool:
        """A complete message starts at ``at``: its header, a blank line, and exactly one
        JSON value of the length it declares."""
        match = _LENGTH.match(self._buf, at)
        blank = self._buf.find(b"\r\n\r\n", at)
        if match is None or blank < 0:
            return False
        start = blank + 4
        end = start + int(match.group(1))
        return end <= len(self._buf) and _json_end(self._buf[start:end]) is not None

    def _header_inside(self, length: int) -> int | None:
        """Where a ``Content-Length`` header begins inside a body that cannot be JSON (a
        declared length too long by less than a header's size hides the next header's
        start in the body); None when there is none."""
        while True:
            lowered = bytes(self._buf[:length + len(_NAME)]).lower()
            at = lowered.find(_NAME)
            if 0 < at < length:
                return at
            if at >= 0 or self._eof or len(self._buf) >= length + len(_NAME):
                return None
            tail = lowered[:length]
            if not any(tail.endswith(_NAME[:k]) for k in range(1, len(_NAME))):
                return None
            if not self._fill(self._idle_s):  # the rest of the header does not come
                return None

    def _short_body(self, declared: int, actual: int, why: str) -> bytes:
        log.warning("Content-Length said %d bytes but the message was complete after %d (%s): "
                    "resynchronised", declared, actual, why)
        body = bytes(self._buf[:actual])
        del self._buf[:actual]
        return body


def _json_end(data: bytes | bytearray) -> int | None:
    """The length of ``data`` when it is exactly one JSON value (whitespace around it)."""
    try:
        text = bytes(data).decode("utf-8")
        _, end = json.JSONDecoder().raw_decode(text.lstrip())
    except (ValueError, RecursionError):
        return None
    return len(data) if not text.lstrip()[end:].strip() else None


_ID_VALUE = re.compile(rb'\s*:\s*(-?\d{1,18}(?![\d.eE])|"(?:[^"\\]|\\.){0,200}")')


def top_level_id(body: bytes) -> Any:
    """The ``id`` member of a top-level object, found without decoding nested values (for a
    body too deep to decode); None when there is none."""
    depth, i, size = 0, 0, len(body)
    while i < size:
        char = body[i]
        if char == 0x22:  # a string: skip it, and look at it when it is a key at depth 1
            end = i + 1
            while end < size and body[end] != 0x22:
                end += 2 if body[end] == 0x5C else 1
            if depth == 1 and body[i:end + 1] == b'"id"':
                match = _ID_VALUE.match(body, end + 1)
                if match is not None:
                    return json.loads(match.group(1))
            i = end + 1
            continue
        if char in b"[{":
            depth += 1
        elif char in b"]}":
            depth -= 1
        i += 1
    return None


def _is_notification_method(method: str) -> bool:
    """An LSP notification method (pygls would run it for a request and never answer)."""
    types = lsp.METHOD_TO_TYPES.get(method)
    return types is not None and types[0].__name__.endswith("Notification")


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (
        isinstance(value, int) and not isinstance(value, bool))


def _clip(text: str) -> str:
    return text if len(text) <= _DESCRIBE_LIMIT else text[:_DESCRIBE_LIMIT] + " …"


def describe_structure_error(exc: BaseException | None) -> str:
    """Which fields were wrong, in cattrs's ``@ $.params.field`` notation."""
    from cattrs import transform_error
    from cattrs.errors import ClassValidationError

    if isinstance(exc, ClassValidationError):
        return _clip("; ".join(transform_error(exc, path="$")))
    return _clip(f"{type(exc).__name__}: {exc}" if exc is not None else "invalid params")


class Dispatcher:
    """Checks one decoded body and hands it to pygls, or answers the error itself."""

    def __init__(self, server: AgentLanguageServer) -> None:
        self.server = server

    @property
    def protocol(self) -> JsonRPCProtocol:
        return self.server.protocol

    def reply_error(self, msg_id: Any, error: JsonRpcException) -> None:
        if msg_id is None:  # JSON-RPC: "id": null, which pygls's serialiser would leave out
            self.protocol._send_data(redact_data({"jsonrpc": "2.0", "id": None, "error": {
                "code": error.code, "message": error.message}}))
            return
        self.protocol._send_response(msg_id, None, error.to_response_error())

    def dispatch(self, body: bytes) -> None:
        try:
            data = json.loads(body)
        except ValueError as exc:  # UnicodeDecodeError is a ValueError
            log.warning("a message body is not JSON: %s", exc)
            self.reply_error(None, JsonRpcParseError(
                f"Parse error: the message body is not JSON ({_clip(str(exc))})"))
            return
        except RecursionError:
            log.warning("a message is nested too deeply to decode")
            self.reply_error(top_level_id(body), JsonRpcInvalidRequest(
                "Invalid request: the message is nested too deeply"))
            return
        if not isinstance(data, dict):
            kind = "a batch (array)" if isinstance(data, list) else type(data).__name__
            log.warning("a message is %s, not a JSON-RPC object", kind)
            self.reply_error(None, JsonRpcInvalidRequest(
                f"Invalid request: a message must be one JSON-RPC object, got {kind}"))
            return
        has_id = "id" in data
        if has_id and not _valid_id(data["id"]):
            self.reply_error(None, JsonRpcInvalidRequest(
                "Invalid request: 'id' must be an integer or a string"))
            return
        msg_id = data.get("id")
        problem = self._envelope_problem(data)
        if problem is not None:
            if has_id:
                self.reply_error(msg_id, JsonRpcInvalidRequest(f"Invalid request: {problem}"))
            else:
                log.warning("ignored a notification: %s", problem)
            return
        if "method" not in data:
            self._response(data)
        elif has_id:
            self._request(msg_id, data)
        else:
            self._notification(data)

    @staticmethod
    def _envelope_problem(data: Mapping[str, Any]) -> str | None:
        if data.get("jsonrpc") != "2.0":
            return "'jsonrpc' must be \"2.0\""
        if "method" in data:
            if not isinstance(data["method"], str):
                return "'method' must be a string"
            params = data.get("params")
            if params is not None and not isinstance(params, dict | list):
                return "'params' must be an object or an array"
            return None
        if "id" in data and ("result" in data or "error" in data):
            return None
        return "a message needs a 'method' (request, notification) or a 'result' / 'error'"

    def _structure(self, data: Mapping[str, Any]) -> Any:
        envelope = {"jsonrpc": "2.0", "method": data["method"], "params": data.get("params")}
        if "id" in data:
            envelope["id"] = data["id"]
        return self.protocol.structure_message(envelope)

    def _request(self, msg_id: Any, data: Mapping[str, Any]) -> None:
        method = data["method"]
        if getattr(self.protocol, "_shutdown", False) and method != lsp.EXIT:
            self.reply_error(msg_id, JsonRpcInvalidRequest(
                f"Invalid request: the server is shutting down and will not run {method}"))
            return
        if _is_notification_method(method):
            self.reply_error(msg_id, JsonRpcInvalidRequest(
                f"Invalid request: {method} is a notification; send it without an 'id'"))
            return
        try:
            message = self._structure(data)
        except JsonRpcException as exc:
            detail = describe_structure_error(exc.__cause__)
            log.warning("%s request %r: invalid params: %s", method, msg_id, detail)
            self.reply_error(msg_id, JsonRpcInvalidParams(
                f"Invalid params for {method}: {detail}"))
            return
        self.protocol.handle_message(message)

    def _notification(self, data: Mapping[str, Any]) -> None:
        method = data["method"]
        try:
            message = self._structure(data)
        except JsonRpcException as exc:
            log.warning("ignored %s notification: invalid params: %s", method,
                        describe_structure_error(exc.__cause__))
            return
        if method == lsp.TEXT_DOCUMENT_DID_CHANGE and self._stale_change(message.params):
            return
        self.protocol.handle_message(message)

    def _stale_change(self, params: Any) -> bool:
        document = self.server.workspace.text_documents.get(params.text_document.uri)
        held = getattr(document, "version", None)
        given = params.text_document.version
        if held is not None and given is not None and given < held:
            log.warning("ignored didChange for %s: version %d is older than version %d held",
                        params.text_document.uri, given, held)
            return True
        return False

    def _response(self, data: Mapping[str, Any]) -> None:
        msg_id = data["id"]  # checked by dispatch(): an int or a string
        ours = msg_id in self.protocol._result_types  # a request the server sent
        try:
            message = self.protocol.structure_message(dict(data))
            self.protocol.handle_message(message)
        except JsonRpcException as exc:
            # The request that waits for it fails with the reason (it would wait forever).
            problem = describe_structure_error(exc.__cause__)
            log.warning("a response from the client does not fit its request: %s", problem)
            waiting = self.protocol._request_futures.pop(msg_id, None) if ours else None
            if waiting is not None and not waiting.done():
                waiting.set_exception(JsonRpcInvalidParams(
                    f"the client's answer does not fit the request: {problem}"))
        except (FutureInvalidState, asyncio.InvalidStateError):
            # pygls sets the answer on the request's future, which a cancelled waiter
            # cancelled: an answer that comes after nobody waits any more.
            log.info("ignored the client's answer to request %r: the server no longer "
                     "waits for it", msg_id)
