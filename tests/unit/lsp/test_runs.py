"""RunManager around the edit: a cancel that lands after the model has finished but before
``workspace/applyEdit`` went out sends nothing; once the edit is out, its answer is recorded
even if the request goes away. The engine and the scripted model are real; the editor is a
stand-in that records what the server sends (the end-to-end suite is tests/lsp/)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import client_capabilities
from tests.engine.conftest import settings_for

from agentls.devtools.replay.command import ReplayServer
from agentls.engine.host import EngineHost
from agentls.engine.review_notes import CANCELLED_NOTE
from agentls.engine.review_notes import pending as pending_notes
from agentls.engine.run_request import RunRequest
from agentls.lsp.services.resolved_settings import LspSettings
from agentls.lsp.services.runs import RunContext, RunManager
from agentls.lsp.services.turn import TurnRequest
from agentls.workspace.fence import Workspace

EDIT_SCRIPT = {"steps": [
    {"match": {"tool_results": False}, "reply": {"tool_calls": [
        {"id": "w1", "name": "write_file", "arguments": {"path": "new.py",
                                                          "content": "x = 1\n"}}]}},
    {"match": {"tool_results": True}, "reply": {"text": "Created new.py."}},
]}


class Editor:
    """The editor connection a run hands to its frontend, progress and delivery (the parts
    of AgentLanguageServer they use), with an editor that records."""

    def __init__(self, host: EngineHost, root: Path) -> None:
        self.host = host
        self.roots = [root]
        self.workspace = _Documents()
        self.position_encoding = "utf-16"
        self.protocol = self
        self.chat_events: list[dict[str, Any]] = []
        self.edits: list[lsp.ApplyWorkspaceEditParams] = []
        self.answer: asyncio.Future[bool] | None = None  # pending: the preview is open
        self.on_capabilities: Callable[[], None] | None = None
        self._capabilities = client_capabilities("visual-studio-code")
        self._background: set[asyncio.Task[Any]] = set()

    @property
    def client_capabilities(self) -> lsp.ClientCapabilities:
        if self.on_capabilities is not None:
            self.on_capabilities()
        return self._capabilities

    def new_workspace(self) -> Workspace:
        return Workspace(self.roots)

    @property
    def root(self) -> Path:
        return self.roots[0]

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.create_task(coroutine)
        self._background.add(task)
        return task

    def notify(self, method: str, params: Any) -> None:
        self.chat_events.append(params)

    async def workspace_apply_edit_async(
        self, params: lsp.ApplyWorkspaceEditParams
    ) -> lsp.ApplyWorkspaceEditResult:
        self.edits.append(params)
        applied = await self.answer if self.answer is not None else True
        return lsp.ApplyWorkspaceEditResult(applied=applied)

    def window_show_message(self, params: lsp.ShowMessageParams) -> None:
        pass


class _Documents:
    def __init__(self) -> None:
        self.text_documents: dict[str, Any] = {}  # no open buffers


@pytest.fixture
async def editor(server: ReplayServer, tmp_path: Path) -> AsyncIterator[Editor]:
    root = tmp_path / "project"
    root.mkdir()
    host = EngineHost(settings_for(server), root)
    yield Editor(host, root)
    await host.aclose()


def manager(editor: Editor) -> RunManager:
    """A run manager given only what a RunContext holds: it calls nothing back up."""
    context = RunContext(editor=editor, new_workspace=editor.new_workspace,  # type: ignore[arg-type]
                         root=lambda: editor.root, spawn=editor.spawn)
    return RunManager(context, LspSettings())


async def test_a_cancel_after_the_run_but_before_the_edit_sends_nothing(
    editor: Editor, server: ReplayServer
) -> None:
    server.load(EDIT_SCRIPT)
    runs = manager(editor)
    cancelled: list[bool] = []

    def cancel_once_the_run_is_over() -> None:
        # Delivery reads the capabilities just before planning the edit: cancel right then.
        if any(e["kind"] == "edit" for e in editor.chat_events) and not cancelled:
            cancelled.append(runs.cancel(runs.running()[0]))

    editor.on_capabilities = cancel_once_the_run_is_over
    turn = await runs.run(TurnRequest(RunRequest("create new.py")), editor.host)

    assert cancelled == [True]
    assert editor.edits == []
    assert turn.stop_reason == "cancelled" and turn.text == "Created new.py."
    assert turn.chat_result()["changes"] == [] and turn.applied is None
    done = editor.chat_events[-1]
    assert done["kind"] == "done" and done["stopReason"] == "cancelled"
    store = editor.host.store
    assert pending_notes(store, turn.session_id) == [CANCELLED_NOTE]  # the model is told
    actions = [m for m in store.history(turn.session_id) if m.kind == "actions"]
    assert actions[-1].metadata["applied"] is False


async def test_once_the_edit_is_out_its_answer_is_recorded_even_if_the_request_goes_away(
    editor: Editor, server: ReplayServer
) -> None:
    server.load(EDIT_SCRIPT)
    runs = manager(editor)
    editor.answer = asyncio.get_running_loop().create_future()
    request = asyncio.create_task(runs.run(TurnRequest(RunRequest("create new.py")),
                                           editor.host))
    while not editor.edits:
        await asyncio.sleep(0)
    run_id = runs.running()[0]

    assert runs.cancel(run_id) is False  # the preview is open: the editor decides now
    request.cancel()  # $/cancelRequest
    with pytest.raises(asyncio.CancelledError):
        await request
    editor.answer.set_result(True)
    await asyncio.gather(*editor._background)

    store = editor.host.store
    session_id = editor.chat_events[0]["sessionId"]
    actions = [m for m in store.history(session_id) if m.kind == "actions"]
    assert actions[-1].metadata["applied"] is True
    assert pending_notes(store, session_id) == []


def test_the_run_manager_calls_nothing_back_up() -> None:
    """RunManager gets its engine host from the caller and the rest from its RunContext: it
    never awaits the engine itself, and only hands the editor connection on (to the
    frontend, progress and delivery), never calling it."""
    import inspect
    import re

    from agentls.lsp.services import runs

    source = inspect.getsource(runs)
    assert "engine()" not in source and "engine_if_built" not in source
    assert re.findall(r"\beditor\.\w+", source) == []
    assert "self._ls" not in source
