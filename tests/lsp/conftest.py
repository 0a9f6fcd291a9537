"""End-to-end harness: the real server (``python -m agentls serve``) in a subprocess, a
pytest-lsp client with recorded editor capabilities, and the scripted model server
(agentls.devtools.replay.command, not a real model) in this process.

The client records what the server sends: ``agentls/chatEvent`` notifications,
``workspace/applyEdit`` requests (answered with ``apply_result``) and
``window/showMessageRequest`` prompts (answered by ``answer``).
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from agentls.devtools.replay.command import ReplayServer
from agentls.lsp.services.protocol import plain

CLIENTS = ["visual-studio-code", "neovim"]
SERVER = [sys.executable, "-P", "-m", "agentls", "serve"]
WAIT_S = 30  # a safety net so a broken server fails the test instead of hanging it

Event = dict[str, Any]


class AgentClient(LanguageClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.chat_events: list[Event] = []
        self.edits: list[lsp.ApplyWorkspaceEditParams] = []
        self.apply_result = lsp.ApplyWorkspaceEditResult(applied=True)
        self.prompts: list[lsp.ShowMessageRequestParams] = []
        self.answer: Callable[[lsp.ShowMessageRequestParams],
                              str | Awaitable[str | None] | None] = lambda _: None
        self.before_answer: Callable[[], None] | None = None  # runs before a prompt's answer
        self.open_texts: dict[str, tuple[int, str]] = {}  # uri -> (version, text)
        self.apply_to_documents = True  # an applied edit changes the open documents
        # Neovim's stale skip: the person typed while the edit was on its way (the documents'
        # versions move on before the answer), so the edit is skipped, yet answered applied.
        self.moved_before_answer = False
        self.apply_gate: asyncio.Event | None = None  # set: applyEdit is answered once it is
        # The editor's own preview with files unticked (VS Code's refactor preview): only these
        # URIs are applied, and the answer is still ``applied: true``.
        self.apply_only: set[str] | None = None
        self._waiters: list[tuple[Callable[[Event], bool], asyncio.Future[Event]]] = []

    def record_event(self, params: Any) -> None:
        event = plain(params)
        self.chat_events.append(event)
        for waiter in list(self._waiters):
            predicate, future = waiter
            if not future.done() and predicate(event):
                future.set_result(event)
                self._waiters.remove(waiter)

    async def wait_for_event(self, predicate: Callable[[Event], bool]) -> Event:
        """The first chat event (already received or still to come) that fits."""
        for event in self.chat_events:
            if predicate(event):
                return event
        future: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self._waiters.append((predicate, future))
        return await asyncio.wait_for(future, WAIT_S)

    def events(self, run_id: str, kind: str | None = None) -> list[Event]:
        return [e for e in self.chat_events
                if e["runId"] == run_id and (kind is None or e["kind"] == kind)]

    def send(self, method: str, params: Any, msg_id: str | None = None) -> asyncio.Future[Any]:
        """Start a request; the future resolves to its result as plain data."""
        pending = self.protocol.send_request_async(method, params, msg_id=msg_id)

        async def result() -> Any:
            return plain(await asyncio.wait_for(pending, WAIT_S))

        return asyncio.ensure_future(result())

    async def chat(self, prompt: str, **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.send("agentls/chat", {"prompt": prompt, **params})
        return result


def make_client() -> AgentClient:
    client = AgentClient(converter_factory=default_converter)
    register_lsp_features(client)

    @client.feature(lsp.WORKSPACE_APPLY_EDIT)
    async def apply_edit(ls: AgentClient,
                         params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
        ls.edits.append(params)
        if ls.apply_gate is not None:  # a person still looking at the refactor preview
            await ls.apply_gate.wait()
        if ls.moved_before_answer:
            touch_open_documents(ls, params.edit)
        if ls.apply_result.applied and ls.apply_to_documents:
            edit = params.edit
            if ls.apply_only is not None:
                edit = lsp.WorkspaceEdit(document_changes=[
                    e for e in edit.document_changes or ()
                    if isinstance(e, lsp.TextDocumentEdit)
                    and e.text_document.uri in ls.apply_only])
            apply_to_open_documents(ls, edit)
        return ls.apply_result

    @client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
    async def show_message_request(ls: AgentClient, params: lsp.ShowMessageRequestParams
                                   ) -> lsp.MessageActionItem | None:
        ls.prompts.append(params)
        if ls.before_answer is not None:
            ls.before_answer()
        title = ls.answer(params)
        if inspect.isawaitable(title):
            title = await title
        return lsp.MessageActionItem(title=title) if title is not None else None

    @client.feature("agentls/chatEvent")
    def chat_event(ls: AgentClient, params: Any) -> None:
        ls.record_event(params)

    return client


CONFIG = ClientServerConfig(server_command=SERVER, client_factory=make_client)


@pytest.fixture
def model() -> Iterator[ReplayServer]:
    with ReplayServer({"steps": []}) as running:
        yield running


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "src" / "main.py").write_text("from calc import add\n\nprint(add(1, 2))\n")
    (root / "README.md").write_text("# calc\n")
    return root


def options_for(model: ReplayServer, **lsp_settings: Any) -> dict[str, Any]:
    """initializationOptions pointing the server at the scripted model."""
    return {
        "backend": "scripted",
        "backends": {"scripted": {"base_url": model.base_url, "model": "scripted-model",
                                  "api_key_env": None, "context_max_tokens": 32000}},
        "cache": {"enabled": False},
        "retry": {"max_retries": 0},
        "lsp": {"chat_requests_per_minute": 1000, **lsp_settings},
    }


async def initialize(client: AgentClient, capabilities: lsp.ClientCapabilities, root: Path,
                     options: dict[str, Any]) -> lsp.InitializeResult:
    return await client.initialize_session(lsp.InitializeParams(
        capabilities=capabilities,
        root_uri=root.as_uri(),
        workspace_folders=[lsp.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        initialization_options=options,
    ))


@pytest_lsp.fixture(config=CONFIG, params=CLIENTS)
async def client(lsp_client: AgentClient, request: pytest.FixtureRequest, model: ReplayServer,
                 project: Path) -> AsyncIterator[None]:
    """Initialized with the recorded capabilities of VS Code, then of Neovim."""
    lsp_client.editor = request.param  # type: ignore[attr-defined]
    await initialize(lsp_client, client_capabilities(request.param), project, options_for(model))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def bare_client(lsp_client: AgentClient) -> AsyncIterator[None]:
    """Started but not initialized: the test initializes it as it needs."""
    yield
    await lsp_client.shutdown_session()


def apply_to_open_documents(client: AgentClient, edit: lsp.WorkspaceEdit) -> None:
    """What an editor does with an applied edit: its open documents change (didChange)."""
    from agentls.workspace.line_diff import split_lines

    for entry in edit.document_changes or ():
        if not isinstance(entry, lsp.TextDocumentEdit):
            continue
        uri = entry.text_document.uri
        if uri not in client.open_texts:
            continue
        version, text = client.open_texts[uri]
        starts = [0]
        for line in split_lines(text):
            starts.append(starts[-1] + len(line))

        def offset(p: lsp.Position, starts: list[int] = starts, size: int = len(text)) -> int:
            return min(starts[p.line] + p.character, size) if p.line < len(starts) else size

        for e in sorted(entry.edits, key=lambda e: (e.range.start.line, e.range.start.character),
                        reverse=True):
            text = text[:offset(e.range.start)] + e.new_text + text[offset(e.range.end):]
        client.open_texts[uri] = (version + 1, text)
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))


def touch_open_documents(client: AgentClient, edit: lsp.WorkspaceEdit) -> None:
    """The edit's open documents move on to a new version (same text): a keystroke undone."""
    for entry in edit.document_changes or ():
        if isinstance(entry, lsp.TextDocumentEdit) and entry.text_document.uri in client.open_texts:
            uri = entry.text_document.uri
            version, text = client.open_texts[uri]
            client.open_texts[uri] = (version + 1, text)
            client.text_document_did_change(lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))


def open_document(client: AgentClient, path: Path, text: str, version: int = 1) -> str:
    uri = path.as_uri()
    client.open_texts[uri] = (version, text)
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=version,
                                           text=text)))
    return uri


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def last_user_message(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    return content if isinstance(content, str) else str(content)


def tool_result_text(body: dict[str, Any], call_id: str) -> str:
    return next(str(m["content"]) for m in body["messages"]
                if m["role"] == "tool" and m.get("tool_call_id") == call_id)


def apply_text_edits(text: str, edits: Any, encoding: str = "utf-16") -> str:
    """``text`` with LSP TextEdits applied, positions counted in ``encoding`` code units."""
    lines = text.splitlines(keepends=True) or [""]

    def offset(position: lsp.Position) -> int:
        start = sum(len(line) for line in lines[: position.line])
        line = lines[position.line] if position.line < len(lines) else ""
        units = 0
        for index, char in enumerate(line):
            if units >= position.character:
                return start + index
            units += len(char.encode("utf-16-le")) // 2 if encoding == "utf-16" else len(
                char.encode("utf-8"))
        return start + len(line)

    spans = sorted(((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits),
                   reverse=True)
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text
