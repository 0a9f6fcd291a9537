"""The server's main loop over stdio: a reader thread hands each framed body
(``wire.FrameReader``) to the event loop, which dispatches it (``wire.Dispatcher``) until
``exit`` or the end of the input stream.

Whatever one message raises is logged (its method and id) and the loop goes on: an editor's
server must not end because one message could not be handled (the editor would restart it
and lose every run in progress). Only ``exit`` ends it, with pygls's code (0 after
``shutdown``, 1 without); the end of the input stream ends it with 0.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from typing import TYPE_CHECKING, BinaryIO

from pygls.io_ import StdoutWriter

from agentls.lsp.transport.wind_down import WIND_DOWN_S, wind_down
from agentls.lsp.transport.wire import Dispatcher, FrameReader

if TYPE_CHECKING:
    from agentls.lsp.server import AgentLanguageServer

log = logging.getLogger(__name__)


class _DiscardingWriter:
    """After ``exit`` closed stdout: what pygls still sends while tasks wind down is
    dropped (writing to the closed stream would report an error that it writes again)."""

    def close(self) -> None:
        return None

    def write(self, data: bytes) -> None:
        return None


async def _serve(server: AgentLanguageServer, reader: FrameReader,
                 stop_event: threading.Event) -> int:
    loop = asyncio.get_running_loop()
    bodies: asyncio.Queue[bytes | None] = asyncio.Queue()

    def read_all() -> None:  # a daemon thread: a blocked read never holds up the exit
        body: bytes | None = b""
        while body is not None:
            try:
                body = reader.next_body()
            except OSError as exc:
                log.error("reading from the client failed: %s", exc)
                body = None
            try:
                loop.call_soon_threadsafe(bodies.put_nowait, body)
            except RuntimeError:  # the loop has ended (after exit): nobody reads any more
                return

    threading.Thread(target=read_all, name="agentls-reader", daemon=True).start()
    dispatcher = Dispatcher(server)
    code = 0
    while not stop_event.is_set():
        body = await bodies.get()
        if body is None:
            # Nobody reads any more: nothing (this log line included) goes to the client.
            server.protocol.writer = _DiscardingWriter()
            log.info("the client closed the connection")
            break
        try:
            dispatcher.dispatch(body)
        except SystemExit as exc:  # pygls's exit handler: 0 after shutdown, 1 without
            server.protocol.writer = _DiscardingWriter()
            code = exc.code if isinstance(exc.code, int) else 1
            break
        except BrokenPipeError:
            raise  # the client is gone: serve_stdio ends the server (pygls re-raises it)
        except Exception:  # one message's failure never ends the server
            log.exception("%s could not be handled (the server goes on)", _named(body))
    if not await wind_down(WIND_DOWN_S):  # a task would hold asyncio.run forever: exit now
        server.shutdown()
        logging.shutdown()
        os._exit(code)
    return code


def _named(body: bytes) -> str:
    """The message's method and id, for a log line (never its params: they may hold text
    the person typed)."""
    try:
        data = json.loads(body)
        return f"{data.get('method', 'a response')} (id {data.get('id')!r})"
    except (ValueError, AttributeError):
        return "a message"


def serve_stdio(server: AgentLanguageServer, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Run the server over these streams with AgentLS's reader (see the module notes).

    A client's ``exit`` ends the process with pygls's exit code (0 after ``shutdown``,
    1 without); the end of the input stream ends it with 0. Returns the exit code."""
    stop_event = threading.Event()
    server._stop_event = stop_event
    server.protocol.set_writer(StdoutWriter(stdout))
    try:
        return asyncio.run(_serve(server, FrameReader(stdin.fileno()), stop_event))
    except BrokenPipeError:
        log.error("the connection to the client is lost: shutting down")
        return 1
    finally:
        server.shutdown()
