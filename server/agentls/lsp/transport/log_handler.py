"""Logging to the editor through ``window/logMessage`` (esbonio style).

pygls's own records are skipped: it logs every message it sends, and sending a log message
would log again. Records from other threads are handed to the event loop's thread, which
owns the transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

if TYPE_CHECKING:
    from agentls.lsp.services.server_context import ServerContext

_TYPES = (
    (logging.ERROR, lsp.MessageType.Error),
    (logging.WARNING, lsp.MessageType.Warning),
    (logging.INFO, lsp.MessageType.Info),
)


def message_type(level: int) -> lsp.MessageType:
    for threshold, kind in _TYPES:
        if level >= threshold:
            return kind
    return lsp.MessageType.Log


class LspLogHandler(logging.Handler):
    def __init__(self, ls: ServerContext, level: int = logging.INFO) -> None:
        super().__init__(level)
        self._ls = ls
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._local = threading.local()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop whose thread writes to the client (call from that thread)."""
        self._loop = loop
        self._loop_thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == "pygls" or record.name.startswith("pygls."):
            return
        if self._ls.protocol.writer is None or getattr(self._local, "busy", False):
            return
        if self._loop is None:
            # No loop in this thread: not the server's thread, nothing to bind.
            with contextlib.suppress(RuntimeError):
                self.bind(asyncio.get_running_loop())
        try:
            params = lsp.LogMessageParams(type=message_type(record.levelno),
                                          message=self.format(record))
            if threading.get_ident() == self._loop_thread:
                self._send(params)
            elif self._loop is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._send, params)
        except Exception:
            self.handleError(record)

    def _send(self, params: lsp.LogMessageParams) -> None:
        self._local.busy = True  # a failure while sending must not log back into us
        try:
            self._ls.window_log_message(params)
        finally:
            self._local.busy = False
