"""One language server's life over one workspace: started on first use, told the pending
text as open documents, asked with a time limit, restarted once after a crash, stopped.

Nothing here blocks a turn for long: every wait has a limit, and a server that cannot start
or answer raises ``ServerFailed`` with what it printed, which the tools and the check turn
into words for the model and the person.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from agentls.langservers.client import ServerClient
from agentls.langservers.specs import ServerSpec, language_of
from agentls.sandbox.launched_server import Launch, LaunchError

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_OPEN_DOCUMENTS = 200  # past it the least recently used are closed in the server
STOP_WAIT_S = 2.0


class ServerFailed(Exception):
    """The server could not start or answer; the message says why, for model and person."""


CLIENT_CAPABILITIES = lsp.ClientCapabilities(
    workspace=lsp.WorkspaceClientCapabilities(
        configuration=True, workspace_folders=True,
        symbol=lsp.WorkspaceSymbolClientCapabilities(dynamic_registration=False),
        diagnostics=lsp.DiagnosticWorkspaceClientCapabilities(refresh_support=False)),
    text_document=lsp.TextDocumentClientCapabilities(
        synchronization=lsp.TextDocumentSyncClientCapabilities(dynamic_registration=False),
        publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(
            version_support=True, related_information=False),
        # True: servers that offer pull diagnostics only by registering them (basedpyright).
        diagnostic=lsp.DiagnosticClientCapabilities(dynamic_registration=True),
        definition=lsp.DefinitionClientCapabilities(link_support=True),
        references=lsp.ReferenceClientCapabilities(),
        hover=lsp.HoverClientCapabilities(
            content_format=[lsp.MarkupKind.PlainText, lsp.MarkupKind.Markdown])),
    window=lsp.WindowClientCapabilities(work_done_progress=True),
    general=lsp.GeneralClientCapabilities(position_encodings=[lsp.PositionEncodingKind.Utf16]),
)


class _Document:
    __slots__ = ("changed_at", "text", "version")

    def __init__(self, text: str, version: int, changed_at: int) -> None:
        self.text = text
        self.version = version
        self.changed_at = changed_at  # the client's push serial when it was last sent


class LangServer:
    """One server process (and its replacement after a crash) over one workspace."""

    def __init__(self, spec: ServerSpec, roots: Sequence[Path],
                 launcher: Callable[[], Launch]) -> None:
        self.spec = spec
        self.roots = tuple(roots)
        self._launcher = launcher
        self.client: ServerClient | None = None
        self.capabilities: lsp.ServerCapabilities | None = None
        self._launch: Launch | None = None
        self.lock = asyncio.Lock()  # one exchange (sync + request) at a time
        self.failed: str | None = None  # why it will not be started again
        self.restarts = 0
        self.starts = 0
        self.cold_start_s: float | None = None
        self.last_used = time.monotonic()
        self._docs: OrderedDict[str, _Document] = OrderedDict()

    @property
    def running(self) -> bool:
        return self.client is not None and not self.client.exited.done()

    @property
    def pid(self) -> int | None:
        return self.client.pid if self.client is not None else None

    # -- start and stop ----------------------------------------------------------------

    async def _ensure(self) -> ServerClient:
        if self.failed is not None:
            raise ServerFailed(self.failed)
        if self.client is not None and not self.client.exited.done():
            return self.client
        if self.client is not None:  # it crashed: once more, then never again
            code = self.client.exited.result()
            said = self.client.said()
            await self._discard()
            if self.restarts >= 1:
                self.failed = (f"language server {self.spec.name} exited (code {code}) again "
                               f"after a restart" + (f"; it said: {said}" if said else ""))
                raise ServerFailed(self.failed)
            self.restarts += 1
            log.warning("language server %s exited (code %s); restarting it once",
                        self.spec.name, code)
        return await self._start()

    async def _start(self) -> ServerClient:
        started = time.monotonic()
        try:
            launch = await asyncio.to_thread(self._launcher)
        except LaunchError as exc:
            self.failed = str(exc)
            raise ServerFailed(self.failed) from None
        client = ServerClient(self.spec.name, self.spec.settings)
        self.client, self._launch = client, launch
        self.starts += 1
        try:
            await client.start(launch.argv, launch.env, launch.cwd)
        except OSError as exc:
            await self._discard()
            self.failed = f"language server {self.spec.name} could not start: {exc}"
            raise ServerFailed(self.failed) from None
        params = lsp.InitializeParams(
            # None: in the sandbox's pid namespace AgentLS's pid names no process, and a
            # server that watches its parent would end itself.
            process_id=None,
            root_uri=self.roots[0].as_uri(),
            root_path=str(self.roots[0]),
            workspace_folders=[lsp.WorkspaceFolder(uri=r.as_uri(), name=r.name)
                               for r in self.roots],
            capabilities=CLIENT_CAPABILITIES,
            client_info=lsp.ClientInfo(name="agentls"),
            initialization_options=dict(self.spec.initialization_options) or None,
        )
        answer = asyncio.ensure_future(client.initialize_async(params))
        try:
            waiting: set[asyncio.Future[Any]] = {answer, client.exited}
            done, _ = await asyncio.wait(waiting,
                                         timeout=self.spec.startup_timeout_s,
                                         return_when=asyncio.FIRST_COMPLETED)
            if answer in done:
                result = answer.result()
            elif client.exited in done:
                raise ServerFailed(
                    f"language server {self.spec.name} exited at start (code "
                    f"{client.exited.result()})" + self._said(client))
            else:
                raise ServerFailed(
                    f"language server {self.spec.name} did not answer initialize within "
                    f"{self.spec.startup_timeout_s:g} s" + self._said(client))
        except ServerFailed as exc:
            answer.cancel()
            await self._discard()
            self.failed = str(exc)
            raise
        except (JsonRpcException, RuntimeError) as exc:
            # pygls fails the pending request when the process ends: say it ended, with code.
            await asyncio.wait([client.exited], timeout=1)
            why = (f"exited at start (code {client.exited.result()})" if client.exited.done()
                   else f"refused initialize: {exc}")
            await self._discard()
            self.failed = f"language server {self.spec.name} {why}" + self._said(client)
            raise ServerFailed(self.failed) from None
        self.capabilities = result.capabilities
        client.initialized(lsp.InitializedParams())
        if self.spec.settings:
            client.workspace_did_change_configuration(
                lsp.DidChangeConfigurationParams(settings=dict(self.spec.settings)))
        self.cold_start_s = time.monotonic() - started
        log.info("language server %s started in %.2f s (pid %s)", self.spec.name,
                 self.cold_start_s, client.pid)
        return client

    @staticmethod
    def _said(client: ServerClient) -> str:
        said = client.said()
        return f"; it said: {said}" if said else ""

    async def _discard(self) -> None:
        client, launch = self.client, self._launch
        self.client, self._launch, self.capabilities = None, None, None
        self._docs.clear()
        if client is not None:
            await client.kill()
        if launch is not None:
            launch.remove_files()

    async def stop(self) -> None:
        """shutdown and exit, then the process is ended whatever it does."""
        client = self.client
        if client is not None and not client.exited.done():
            with contextlib.suppress(Exception):
                async with asyncio.timeout(STOP_WAIT_S):
                    await client.shutdown_async(None)
                    client.exit(None)
                    await asyncio.shield(client.exited)
        await self._discard()

    # -- one exchange --------------------------------------------------------------------

    async def exchange(self, texts: Mapping[Path, str | None],
                       ask: Callable[[ServerClient], Awaitable[T]], what: str,
                       timeout: float | None = None) -> T:
        """Bring the server's documents to ``texts`` (None: closed) plus those it has open
        (their texts are among ``texts`` when the caller read them), then ``ask``. A crash
        during it restarts the server once and asks again."""
        limit = timeout or self.spec.timeout_s
        async with self.lock:
            self.last_used = time.monotonic()
            for attempt in (0, 1):
                client = await self._ensure()
                try:
                    self._sync(client, texts)
                    return await self._answer(client, ask, limit)
                except TimeoutError:
                    raise ServerFailed(f"language server {self.spec.name} did not answer "
                                       f"{what} within {limit:g} s" + self._said(client)
                                       ) from None
                except (JsonRpcException, RuntimeError, ConnectionError, OSError) as exc:
                    if client.exited.done():
                        if attempt == 0:
                            continue  # _ensure restarts it (once per server's life)
                        raise ServerFailed(f"language server {self.spec.name} exited during "
                                           f"{what}" + self._said(client)) from None
                    raise ServerFailed(f"language server {self.spec.name} answered {what} "
                                       f"with an error: {exc}") from None
            raise AssertionError("unreachable")

    @staticmethod
    async def _answer(client: ServerClient, ask: Callable[[ServerClient], Awaitable[T]],
                      limit: float) -> T:
        """``ask``'s answer within ``limit`` (TimeoutError); a server that exits meanwhile
        ends the wait at once (RuntimeError)."""
        task = asyncio.ensure_future(ask(client))
        waiting: set[asyncio.Future[Any]] = {task, client.exited}
        try:
            done, _ = await asyncio.wait(waiting, timeout=limit,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not task.done():
                task.cancel()
        if task in done:
            return task.result()
        if client.exited.done():
            raise RuntimeError(f"the server exited (code {client.exited.result()})")
        raise TimeoutError

    def open_paths(self) -> list[Path]:
        return [Path(uri.removeprefix("file://")) for uri in self._docs]

    def _sync(self, client: ServerClient, texts: Mapping[Path, str | None]) -> None:
        for path, text in texts.items():
            uri = path.as_uri()
            doc = self._docs.get(uri)
            if text is None:
                if doc is not None:
                    del self._docs[uri]
                    client.text_document_did_close(lsp.DidCloseTextDocumentParams(
                        text_document=lsp.TextDocumentIdentifier(uri=uri)))
                continue
            if doc is None:
                self._docs[uri] = _Document(text, 1, client.serial)
                client.text_document_did_open(lsp.DidOpenTextDocumentParams(
                    text_document=lsp.TextDocumentItem(
                        uri=uri, language_id=language_of(path) or "plaintext", version=1,
                        text=text)))
            elif doc.text != text:
                doc.text, doc.version, doc.changed_at = text, doc.version + 1, client.serial
                client.text_document_did_change(lsp.DidChangeTextDocumentParams(
                    text_document=lsp.VersionedTextDocumentIdentifier(version=doc.version,
                                                                      uri=uri),
                    content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))
            self._docs.move_to_end(uri)
        while len(self._docs) > MAX_OPEN_DOCUMENTS:
            uri, _ = self._docs.popitem(last=False)
            client.text_document_did_close(lsp.DidCloseTextDocumentParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri)))

    # -- what the tools ask ----------------------------------------------------------------

    @property
    def pulls_diagnostics(self) -> bool:
        """The server answers textDocument/diagnostic (said at initialize, or registered
        later, as basedpyright does): asked then, never waited for as a push."""
        static = self.capabilities is not None and \
            self.capabilities.diagnostic_provider is not None
        return static or (self.client is not None
                          and lsp.TEXT_DOCUMENT_DIAGNOSTIC in self.client.registered)

    async def document_diagnostics(self, client: ServerClient, path: Path
                                   ) -> list[lsp.Diagnostic]:
        """The diagnostics of an open document as it was last sent: pulled when the server
        offers it, else the first push after the last change (settled briefly when the push
        carries no version)."""
        uri = path.as_uri()
        if self.pulls_diagnostics:
            return await _pull_report(client, uri)
        doc = self._docs.get(uri)
        if doc is None:
            return []

        def current() -> bool:
            if self.pulls_diagnostics:  # registered while we waited: ask instead
                return True
            pushed = client.pushed.get(uri)
            if pushed is None:
                return False
            if pushed.version is not None:
                return pushed.version >= doc.version
            return pushed.serial > doc.changed_at

        async with client.pushes:
            await client.pushes.wait_for(current)
        if self.pulls_diagnostics:
            return await _pull_report(client, uri)
        if client.pushed[uri].version is None:
            while True:  # an unversioned push: a later one may follow soon
                serial = client.pushed[uri].serial
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.spec.push_settle_s), client.pushes:
                        await client.pushes.wait_for(_later(client, uri, serial))
                if client.pushed[uri].serial == serial:
                    break
        return list(client.pushed[uri].diagnostics)


async def _pull_report(client: ServerClient, uri: str) -> list[lsp.Diagnostic]:
    report = await client.text_document_diagnostic_async(lsp.DocumentDiagnosticParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri)))
    if isinstance(report, lsp.RelatedFullDocumentDiagnosticReport
                  | lsp.FullDocumentDiagnosticReport):
        return list(report.items)
    return []


def _later(client: ServerClient, uri: str, serial: int) -> Callable[[], bool]:
    return lambda: client.pushed[uri].serial > serial


def memory_kb(pid: int | None) -> int | None:
    """Resident memory of a process and its children (the sandbox's bwrap, the server and
    what it started), from /proc; None where it cannot be read."""
    if pid is None:
        return None
    total = 0
    seen: set[int] = set()
    todo = [pid]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            with open(f"/proc/{current}/status", encoding="ascii", errors="replace") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
            with open(f"/proc/{current}/task/{current}/children", encoding="ascii") as handle:
                todo += [int(c) for c in handle.read().split()]
        except (OSError, ValueError):
            continue
    return total if seen and total else None
