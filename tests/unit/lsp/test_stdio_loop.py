"""The server's main loop (lsp/transport/stdio_loop.py) and the wire's answers
(lsp/transport/wire.py): one
message that cannot be handled never ends the server, and an answer from the client that
comes after the server stopped waiting for it is dropped with a log line (pygls would raise
setting it on the cancelled future, and that used to end the process with code 1)."""

from __future__ import annotations

import io
import json
import logging
import os
import threading
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.io_ import StdoutWriter

from agentls.lsp.server import create_server
from agentls.lsp.transport import wire
from agentls.lsp.transport.stdio_loop import serve_stdio


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_an_answer_after_the_waiter_was_cancelled_is_dropped(
        caplog: pytest.LogCaptureFixture) -> None:
    server = create_server()
    server.protocol.set_writer(StdoutWriter(io.BytesIO()))
    pending = server.protocol.send_request(
        lsp.WINDOW_SHOW_DOCUMENT, lsp.ShowDocumentParams(uri="file:///a.md"), msg_id="late-1")
    pending.cancel()  # what cancelling an `await ls.window_show_document_async(...)` does

    with caplog.at_level(logging.INFO, logger="agentls.lsp.transport.wire"):
        wire.Dispatcher(server).dispatch(json.dumps(
            {"jsonrpc": "2.0", "id": "late-1", "result": {"success": True}}).encode())

    assert "ignored the client's answer to request 'late-1'" in caplog.text
    assert "no longer waits for it" in caplog.text


def test_a_message_that_raises_is_logged_and_the_server_goes_on(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    real = wire.Dispatcher.dispatch

    def dispatch(self: wire.Dispatcher, body: bytes) -> None:
        if b"agentls/boom" in body:
            raise RuntimeError("a bug in one handler")
        real(self, body)

    monkeypatch.setattr(wire.Dispatcher, "dispatch", dispatch)
    server = create_server()
    client_to_server, server_in = os.pipe()
    server_out, server_to_client = os.pipe()
    codes: list[int] = []
    with os.fdopen(client_to_server, "rb") as stdin, os.fdopen(server_to_client, "wb") as stdout, \
            os.fdopen(server_in, "wb") as to_server, os.fdopen(server_out, "rb") as from_server:
        thread = threading.Thread(target=lambda: codes.append(serve_stdio(server, stdin, stdout)))
        with caplog.at_level(logging.ERROR, logger="agentls.lsp.transport.stdio_loop"):
            thread.start()
            to_server.write(frame({"jsonrpc": "2.0", "id": 7, "method": "agentls/boom",
                                   "params": {"secret": "typed by the person"}}))
            to_server.write(frame({"jsonrpc": "2.0", "id": 8, "method": "shutdown"}))
            to_server.flush()
            answer = wire.FrameReader(from_server.fileno()).next_body()  # shutdown's answer
            to_server.write(frame({"jsonrpc": "2.0", "method": "exit"}))
            to_server.flush()
            thread.join(30)

    assert codes == [0]  # ended by `exit` after `shutdown`, not by the failure
    assert answer is not None and json.loads(answer)["id"] == 8
    assert "agentls/boom (id 7) could not be handled (the server goes on)" in caplog.text
    assert "RuntimeError: a bug in one handler" in caplog.text
    assert "typed by the person" not in caplog.text
