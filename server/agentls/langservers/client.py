"""pygls's language client, with what a headless server sends it handled.

The server's diagnostics pushes are kept per document (waiters are woken); its requests for
configuration get ``lsp.servers.NAME.settings``; capability registrations, progress tokens
and edits it asks to apply are answered so it goes on; its log messages and stderr are kept
(the last lines, for the person and the model when it fails) and logged, at most so many a
second, so a flooding server cannot fill the log or block on a full pipe.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import signal
import time
from collections.abc import Mapping
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

log = logging.getLogger(__name__)

KEPT_LINES = 20
LOG_LINES_PER_SECOND = 20


class PushedDiagnostics:
    """One document's last published diagnostics."""

    __slots__ = ("diagnostics", "serial", "version")

    def __init__(self, version: int | None, diagnostics: list[lsp.Diagnostic], serial: int
                 ) -> None:
        self.version = version
        self.diagnostics = diagnostics
        self.serial = serial


class ServerClient(LanguageClient):
    """One server's client: ``start_io`` (pygls) runs the process; stderr is drained here."""

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__("agentls", "1")
        self.server_name = name
        self.settings = settings
        self.pushed: dict[str, PushedDiagnostics] = {}
        self.serial = 0  # counts pushes, so a waiter knows a push came after its change
        self.pushes = asyncio.Condition()
        self.lines: collections.deque[str] = collections.deque(maxlen=KEPT_LINES)
        self.malformed = 0
        self.registered: set[str] = set()  # methods the server registered dynamically
        self.exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._log_window = (0.0, 0)
        self._stderr_task: asyncio.Task[None] | None = None
        self._register()

    # -- the process -------------------------------------------------------------------

    async def start(self, argv: list[str], env: dict[str, str], cwd: str) -> None:
        # Its own process group: a server is often a wrapper around another process (a
        # Python script around node), and ending it must end what it started too.
        await self.start_io(argv[0], *argv[1:], env=env, cwd=cwd, start_new_session=True)
        process = self._server
        assert process is not None and process.stderr is not None
        self._stderr_task = asyncio.create_task(self._drain(process.stderr),
                                                name=f"agentls-lsp-stderr-{self.server_name}")

    @property
    def pid(self) -> int | None:
        return self._server.pid if self._server is not None else None

    @property
    def returncode(self) -> int | None:
        return self._server.returncode if self._server is not None else None

    async def server_exit(self, server: asyncio.subprocess.Process) -> None:
        if not self.exited.done():
            self.exited.set_result(server.returncode if server.returncode is not None else -1)

    def report_server_error(self, error: Exception, source: Any) -> None:
        self.malformed += 1
        self.keep(f"unreadable message from the server: {error}")

    async def kill(self) -> None:
        """End the process now (it is in its own pid namespace: its children end with it)."""
        process = self._server
        if process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        self._stop_event.set()
        if process is not None:
            try:
                async with asyncio.timeout(5):
                    await process.wait()
            except TimeoutError:
                log.warning("language server %s (pid %s) did not end after kill",
                            self.server_name, process.pid)
        for task in [*self._async_tasks, *([self._stderr_task] if self._stderr_task else [])]:
            task.cancel()

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        while True:
            try:
                line = await stream.readline()
            except (ValueError, asyncio.LimitOverrunError):  # a line over the stream's limit
                await stream.read(65536)
                continue
            if not line:
                return
            self.keep(line.decode("utf-8", "replace").rstrip(), stream="stderr")

    def keep(self, text: str, *, stream: str = "log") -> None:
        """Keep a line of what the server said, and log it (within the rate limit)."""
        if not text:
            return
        self.lines.append(text[:500])
        now = time.monotonic()
        start, count = self._log_window
        if now - start >= 1.0:
            start, count = now, 0
        count += 1
        self._log_window = (start, count)
        if count <= LOG_LINES_PER_SECOND:
            log.info("language server %s %s: %s", self.server_name, stream, text[:500])
        elif count == LOG_LINES_PER_SECOND + 1:
            log.info("language server %s: more lines this second are not logged",
                     self.server_name)

    def said(self) -> str:
        """The last lines it printed or logged, for an error message."""
        return " | ".join(list(self.lines)[-5:])

    # -- what the server sends ---------------------------------------------------------

    def _register(self) -> None:
        @self.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        async def published(params: lsp.PublishDiagnosticsParams) -> None:
            self.serial += 1
            self.pushed[params.uri] = PushedDiagnostics(params.version,
                                                        list(params.diagnostics), self.serial)
            async with self.pushes:
                self.pushes.notify_all()

        @self.feature(lsp.WORKSPACE_CONFIGURATION)
        def configuration(params: lsp.ConfigurationParams) -> list[Any]:
            return [self._section(item.section) for item in params.items]

        @self.feature(lsp.WINDOW_LOG_MESSAGE)
        def log_message(params: lsp.LogMessageParams) -> None:
            if params.type in (lsp.MessageType.Error, lsp.MessageType.Warning):
                self.keep(params.message)

        @self.feature(lsp.WINDOW_SHOW_MESSAGE)
        def show_message(params: lsp.ShowMessageParams) -> None:
            self.keep(params.message)

        @self.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
        def show_message_request(params: lsp.ShowMessageRequestParams) -> None:
            self.keep(params.message)

        @self.feature(lsp.CLIENT_REGISTER_CAPABILITY)
        async def register(params: lsp.RegistrationParams) -> None:
            self.registered.update(r.method for r in params.registrations)
            async with self.pushes:  # a waiter for a push may pull now instead
                self.pushes.notify_all()

        @self.feature(lsp.CLIENT_UNREGISTER_CAPABILITY)
        def unregister(params: lsp.UnregistrationParams) -> None:
            return None

        @self.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def progress_create(params: lsp.WorkDoneProgressCreateParams) -> None:
            return None

        @self.feature(lsp.PROGRESS)
        def progress(params: Any) -> None:
            return None

        @self.feature(lsp.TELEMETRY_EVENT)
        def telemetry(params: Any) -> None:
            return None

        @self.feature(lsp.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
            return lsp.ApplyWorkspaceEditResult(
                applied=False, failure_reason="AgentLS's language servers do not edit")

        for method in (lsp.WORKSPACE_DIAGNOSTIC_REFRESH, lsp.WORKSPACE_SEMANTIC_TOKENS_REFRESH,
                       lsp.WORKSPACE_INLAY_HINT_REFRESH, lsp.WORKSPACE_CODE_LENS_REFRESH):
            self.feature(method)(_nothing)

    def _section(self, section: str | None) -> Any:
        if not section:
            return dict(self.settings)
        node: Any = self.settings
        for part in section.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node


def _nothing(params: Any = None) -> None:
    return None
