"""A run's status line: ``$/progress`` work-done progress, cancellable (DESIGN.md decision 7).

The client's own ``workDoneToken`` is used when it sent one; otherwise, when the client
declared ``window.workDoneProgress``, the server creates a token first (one round trip; a
client that does not answer within ``CREATE_TIMEOUT_S`` gets no progress for that run).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

if TYPE_CHECKING:
    from agentls.lsp.services.server_context import ServerContext

log = logging.getLogger(__name__)

Token = str | int
CREATE_TIMEOUT_S = 2.0


class RunProgress:
    def __init__(self, ls: ServerContext, title: str, on_cancel: Callable[[], None],
                 token: Token | None = None) -> None:
        self._ls = ls
        self._title = title
        self._on_cancel = on_cancel
        self._token = token
        self._message = ""
        self._begun = False
        self._ended = False

    @property
    def token(self) -> Token | None:
        return self._token

    async def start(self, message: str = "") -> None:
        """Begin the progress (creating a token first if the client sent none)."""
        self._message = message
        if self._token is None:
            window = self._ls.client_capabilities.window
            if window is None or not window.work_done_progress:
                return
            token = f"agentls-{uuid.uuid4().hex[:12]}"
            try:
                # Shielded: if the client is slow, its late answer lands on a live future.
                await asyncio.wait_for(
                    asyncio.shield(self._ls.work_done_progress.create_async(token)),
                    CREATE_TIMEOUT_S)
            except Exception as exc:  # no status line is no reason to fail the run
                log.info("no work-done progress for this run (%r)", exc)
                return
            self._token = token
        if not self._ended:
            self._begin()

    def _begin(self) -> None:
        assert self._token is not None
        self._ls.work_done_progress.begin(self._token, lsp.WorkDoneProgressBegin(
            title=self._title, message=self._message or None, cancellable=True))
        self._begun = True
        # pygls cancels this future on window/workDoneProgress/cancel.
        cancelled: Future[None] | None = self._ls.work_done_progress.tokens.get(self._token)
        if cancelled is not None:
            cancelled.add_done_callback(lambda f: self._on_cancel() if f.cancelled() else None)

    def report(self, message: str) -> None:
        self._message = message
        if self._begun and not self._ended and self._token is not None:
            self._ls.work_done_progress.report(
                self._token, lsp.WorkDoneProgressReport(message=message, cancellable=True))

    def end(self, message: str) -> None:
        if self._ended:
            return
        self._ended = True
        if self._begun and self._token is not None:
            self._ls.work_done_progress.end(self._token, lsp.WorkDoneProgressEnd(message=message))
        if self._token is not None:
            self._ls.work_done_progress.tokens.pop(self._token, None)
