"""The HTTP side of the scripted model server: threads, keep-alive connections, chunked
Server-Sent Events and mid-response cuts, on :mod:`http.server`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import select
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from agentls.devtools.replay.requests import RecordedRequest, StreamEnd
from agentls.devtools.replay.wire import Answer, StreamAnswer, error_answer


class ReplayApp(Protocol):
    """What the HTTP side needs from the scripted server (replay_server.ReplayServer)."""

    _stopping: threading.Event
    stream_times: list[list[float]]

    def _answer(self, method: str, path: str, headers: Mapping[str, str], body: Any
                ) -> tuple[Answer | StreamAnswer, int | None]: ...

    def _record(self, request: RecordedRequest) -> None: ...

    def _next_number(self) -> int: ...

    def _stream_ended(self, end: StreamEnd) -> None: ...

    def _enter(self, path: str) -> None: ...

    def _leave(self, path: str) -> None: ...

# The name the server logged under before it was split into modules; callers configure it.
logger = logging.getLogger("agentls.devtools.replay.command")

REDACTED = "<redacted>"
_SECRET_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "proxy-authorization"})


class ReplayHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], app: ReplayApp) -> None:
        self.app = app
        self._connections: dict[socket.socket, int] = {}
        self._connections_lock = threading.Lock()
        self._connection_count = 0
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls getfqdn(), a DNS lookup that can stall without network
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]

    def track(self, connection: socket.socket) -> int:
        with self._connections_lock:
            self._connection_count += 1
            self._connections[connection] = self._connection_count
            return self._connection_count

    def untrack(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._connections.pop(connection, None)

    def close_connections(self) -> None:
        """Shut open keep-alive connections so their handler threads end."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            logger.debug("client %s went away: %r", client_address, exc)
        else:
            logger.exception("scripted model server: error while serving %s", client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "agentls-replay/1"
    sys_version = ""
    server: ReplayHTTPServer

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes: without this, Nagle + delayed ACK
        # stall every response by ~40 ms
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connection_number = self.server.track(self.connection)

    def finish(self) -> None:
        self.server.untrack(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s - " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                data += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return bytes(data)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _serve(self) -> None:
        app = self.server.app
        path = self.path.split("?", 1)[0]
        self.response_started = False
        try:
            raw = self._read_body()
            text = raw.decode("utf-8", errors="replace")
            body: Any = None
            if text.strip():
                try:
                    body = json.loads(text)
                except ValueError:
                    body = text
            headers = {k.lower(): v for k, v in self.headers.items()}
            app._enter(path)
            try:
                self._answer_request(app, path, headers, body)
            finally:
                app._leave(path)
        except (ConnectionError, TimeoutError) as exc:
            logger.debug("client went away during %s %s: %r", self.command, path, exc)
            self.close_connection = True
        except OSError as exc:  # the socket was shut by stop()
            logger.debug("connection closed during %s %s: %r", self.command, path, exc)
            self.close_connection = True
        except Exception:  # a bug here must fail the test loudly, not hang the client
            logger.exception("scripted model server: failed to answer %s %s", self.command, path)
            self.close_connection = True
            if not self.response_started:
                with contextlib.suppress(OSError):
                    self._write(error_answer(500, "scripted model server bug: see its log",
                                             type_="server_error"))

    def _answer_request(self, app: ReplayApp, path: str, headers: dict[str, str],
                        body: Any) -> None:
        answer, step = app._answer(self.command, path, headers, body)
        redacted = {k: REDACTED if k in _SECRET_HEADERS else v for k, v in headers.items()}
        status = answer.status if isinstance(answer, Answer) else 200
        app._record(RecordedRequest(self.command, path, body, redacted, time.time(), status,
                                    step, self.connection_number))
        if isinstance(answer, StreamAnswer):
            self._write_stream(answer, path)
        else:
            self._write(answer)

    def _wait(self, seconds: float) -> bool:
        """Sleep without holding up stop(); False when the server is stopping."""
        return seconds <= 0 or not self.server.app._stopping.wait(seconds)

    def _start(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.response_started = True
        self.send_response(status)
        self.send_header("x-request-id", f"req_scripted{self.server.app._next_number():08d}")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()

    def _write(self, answer: Answer) -> None:
        if not self._wait(answer.delay_s):
            return self._cut()
        self._start(answer.status, [("Content-Type", answer.content_type),
                                    ("Content-Length", str(len(answer.body))), *answer.headers])
        if answer.cut_after_bytes is None:
            self.wfile.write(answer.body)
        else:
            self.wfile.write(answer.body[:answer.cut_after_bytes])
            self._cut()

    def _client_gone(self, seconds: float) -> bool:
        """Wait up to ``seconds`` (0: just look); True as soon as the client has closed the
        connection (a readable socket with nothing to read), so a cancelled stream is seen
        the moment it is closed, as a model server stops generating then."""
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            try:
                readable, _, _ = select.select([self.connection], [], [],
                                               max(0.0, min(remaining, 0.05)))
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    return True
            except (OSError, ValueError):
                return True
            if readable:  # a request pipelined behind this one: nothing to wait for here
                return not self._wait(max(0.0, remaining))
            if remaining <= 0 or self.server.app._stopping.is_set():
                return False

    def _write_stream(self, answer: StreamAnswer, path: str = "") -> None:
        self._start(200, [("Content-Type", "text/event-stream; charset=utf-8"),
                          ("Cache-Control", "no-cache"), ("Transfer-Encoding", "chunked")])
        written: list[float] = []
        self.server.app.stream_times.append(written)
        for sent, event in enumerate(answer.events):
            if sent == answer.drop_after:
                return self._cut()
            if self._client_gone(answer.first_delay_s if sent == 0 else answer.delay_s):
                self.server.app._stream_ended(
                    StreamEnd(path, time.time(), sent, len(answer.events), closed=True))
                return self._cut()
            if self.server.app._stopping.is_set():
                return self._cut()
            frame = b"%x\r\n%s\r\n" % (len(event), event)
            if sent == len(answer.events) - 1 and answer.drop_after is None:
                frame += b"0\r\n\r\n"  # end of body in the same write as [DONE]
            self.wfile.write(frame)
            written.append(time.perf_counter())
        self.server.app._stream_ended(StreamEnd(path, time.time(), len(answer.events),
                                                len(answer.events), closed=False))
        if answer.drop_after is not None:  # asked to drop after at least every event
            self._cut()

    def _cut(self) -> None:
        """End the connection mid-response: the client sees an incomplete body."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
