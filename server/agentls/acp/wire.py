"""The ACP wire over stdio: newline-delimited JSON-RPC, with an answer for every bad message.

The SDK's own stdio transport logs a line that is not JSON and drops it (the client waits
forever), and a line that is JSON but not an object ends its receive loop. Here each bad line
gets the JSON-RPC error it deserves (-32700 parse error, -32600 invalid request) and the
agent reads on; everything well formed goes to the SDK unchanged. Every message leaves with
its secrets redacted (agentls.policy.redaction), like the LSP wire's, except fs/write_text_file: the
text it writes is the reviewed change, unaltered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from agentls.policy.redaction import redact_data

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class LineTransport:
    """``acp``'s message-level ``Transport`` over a stream reader and writer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        if message.get("method") != "fs/write_text_file":  # the one the agent's edit rides in
            message = redact_data(message)
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        async with self._lock:
            if self._closed:
                raise ConnectionError("the client's stream is closed")
            self._writer.write(data)
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if line is None:
                return None
            line = line.strip()
            if not line:
                continue
            problem, message = _check(line)
            if problem is None:
                return message
            await self._refuse(*problem)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError, RuntimeError):  # already gone: nothing to flush
            self._writer.close()

    async def _read_line(self) -> bytes | None:
        """One line, or None at the end of input; an oversized line is answered and skipped."""
        size = 0
        chunks: list[bytes] = []
        while True:
            try:
                chunk = await self._reader.readuntil(b"\n")
            except asyncio.LimitOverrunError as exc:
                chunk = await self._reader.readexactly(exc.consumed)
                size += len(chunk)
                if size <= MAX_MESSAGE_BYTES:
                    chunks.append(chunk)
                continue
            except asyncio.IncompleteReadError as exc:
                if not exc.partial and not chunks:
                    return None
                chunk = exc.partial
            size += len(chunk)
            if size > MAX_MESSAGE_BYTES:
                await self._refuse(None, INVALID_REQUEST,
                                   f"message of {size} bytes is over the {MAX_MESSAGE_BYTES} "
                                   "byte limit; send large files as resource links")
                return b""
            chunks.append(chunk)
            return b"".join(chunks)

    async def _refuse(self, request_id: Any, code: int, message: str) -> None:
        log.warning("refused a message from the client: %s", message)
        await self.send({"jsonrpc": "2.0", "id": request_id,
                         "error": {"code": code, "message": f"AgentLS: {message}"}})


def _check(line: bytes) -> tuple[tuple[Any, int, str] | None, dict[str, Any]]:
    try:
        message = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        return (None, PARSE_ERROR, f"parse error: {exc}; send one JSON-RPC 2.0 message per "
                "line"), {}
    if not isinstance(message, dict):
        return (None, INVALID_REQUEST, "a JSON-RPC message must be a JSON object "
                f"(got {type(message).__name__})"), {}
    request_id = message.get("id")
    if request_id is not None and not isinstance(request_id, (str, int)):
        return (None, INVALID_REQUEST, "the id must be a string or a number"), {}
    method = message.get("method")
    if "method" in message and not isinstance(method, str):
        return (request_id, INVALID_REQUEST, "the method must be a string"), {}
    if method is None and "id" not in message:
        return (None, INVALID_REQUEST, "a message needs a method (request, notification) or "
                "an id (response)"), {}
    params = message.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        return (request_id, INVALID_REQUEST, "params must be an object"), {}
    return None, message
