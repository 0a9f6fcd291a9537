"""The server itself: capabilities, position encoding, settings, start-up weight."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from agentls.engine.sessions.store import SessionStore
from tests.lsp.conftest import AgentClient, initialize, options_for


async def test_capabilities_incremental_sync_commands_and_encoding(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    result = await initialize(bare_client, client_capabilities("visual-studio-code"), project,
                              options_for(model))

    capabilities = result.capabilities
    sync = capabilities.text_document_sync
    assert isinstance(sync, lsp.TextDocumentSyncOptions)
    assert sync.open_close and sync.change == lsp.TextDocumentSyncKind.Incremental
    assert capabilities.execute_command_provider is not None
    assert {"agentls.chat", "agentls.cancel", "agentls.newSession"} <= set(
        capabilities.execute_command_provider.commands)
    assert capabilities.position_encoding in (None, lsp.PositionEncodingKind.Utf16)


async def test_utf8_is_chosen_whenever_offered(bare_client: AgentClient, model: ReplayServer,
                                               project: Path) -> None:
    capabilities = client_capabilities("visual-studio-code")
    capabilities.general = lsp.GeneralClientCapabilities(position_encodings=[
        lsp.PositionEncodingKind.Utf16, lsp.PositionEncodingKind.Utf8])

    result = await initialize(bare_client, capabilities, project, options_for(model))

    assert result.capabilities.position_encoding == lsp.PositionEncodingKind.Utf8


async def test_invalid_settings_are_reported_once_and_defaults_used(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    options = options_for(model, chat_requests_per_minute=0)
    options["max_iterations"] = "lots"
    options["max_iteratons"] = 3
    shown = bare_client.wait_for_notification("window/showMessage")
    await initialize(bare_client, client_capabilities("neovim"), project, options)

    message = await shown

    assert message.type == lsp.MessageType.Error
    text = message.message
    assert "`agentls.max_iterations` = 'lots' is not valid" in text
    assert "Most model turns in one run" in text  # the expected form
    assert "`agentls.lsp.chat_requests_per_minute` = 0" in text and "at least 1" in text
    assert "did you mean `agentls.max_iterations`" in text
    model.load({"steps": [{"reply": {"text": "Still works."}}]})
    result = await bare_client.chat("hello")  # the valid keys (the backend) still apply
    assert result["text"] == "Still works."
    assert [m.type for m in bare_client.messages] == [lsp.MessageType.Error]
    assert any("agentls.max_iterations" in m.message for m in bare_client.log_messages)


async def test_changed_configuration_is_read_again(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    await initialize(bare_client, client_capabilities("visual-studio-code"), project,
                     options_for(model))
    model.load({"steps": [{"reply": {"text": "ok"}}]})
    await bare_client.chat("warm up")  # settings are loaded
    assert bare_client.messages == []

    bare_client.set_configuration({"timeout_ms": -5}, section="agentls")
    shown = bare_client.wait_for_notification("window/showMessage")
    bare_client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings=None))

    message = await shown
    assert "`agentls.timeout_ms` = -5 is not valid" in message.message


def test_start_up_imports_neither_openai_nor_pydantic_nor_sqlite() -> None:
    probe = (
        "import sys\n"
        "from agentls.lsp.server import create_server\n"
        "create_server()\n"
        "heavy = ('openai', 'pydantic', 'sqlite3', 'agentls.settings.config',\n"
        "         'agentls.engine.loop.agent')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    output = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True).stdout
    assert output.strip() == "[]"


async def test_an_unusable_state_folder_is_an_error_that_says_what_to_do(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    (project / ".agentls").write_text("not a folder\n")  # so .agentls/state.db cannot exist
    await initialize(bare_client, client_capabilities("neovim"), project, options_for(model))

    try:
        await bare_client.chat("hello")
    except JsonRpcException as exc:
        message = str(exc)
    else:
        raise AssertionError("the chat should have been refused")

    assert "cannot open its session store" in message and ".agentls" in message
    (project / ".agentls").unlink()
    model.load({"steps": [{"reply": {"text": "Works now."}}]})
    result = await bare_client.chat("hello")  # nothing was cached: the next request retries
    assert result["text"] == "Works now."


async def facts_gathered(client: AgentClient, count: int) -> None:
    """Waits until the server has logged ``count`` background gatherings of the facts."""
    async def logged() -> None:
        while sum("project facts gathered in the background" in m.message
                  for m in client.log_messages) < count:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(logged(), timeout=60)


async def test_project_facts_are_gathered_after_start_up_and_again_when_files_change(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    await initialize(bare_client, client_capabilities("visual-studio-code"), project,
                     options_for(model))
    await facts_gathered(bare_client, 1)
    assert not (project / ".agentls").exists()  # nothing written before the first request

    (project / "src" / "added_after_start.py").write_text("x = 1\n")
    bare_client.text_document_did_save(lsp.DidSaveTextDocumentParams(
        lsp.TextDocumentIdentifier((project / "src" / "added_after_start.py").as_uri())))
    await facts_gathered(bare_client, 2)

    model.load({"steps": [{"reply": {"text": "Seen."}}]})
    result = await bare_client.chat("hello")
    assert result["text"] == "Seen."
    system = model.requests[-1].body["messages"][0]
    assert system["role"] == "system" and "added_after_start.py" in system["content"]


async def start_up_done(client: AgentClient) -> list[str]:
    """Waits for the end of the server's start-up work; answers its log messages."""
    async def logged() -> None:
        while not any("start-up work done in the background" in m.message
                      for m in client.log_messages):
            await asyncio.sleep(0.05)

    await asyncio.wait_for(logged(), timeout=60)
    return [m.message for m in client.log_messages]


async def test_where_a_store_exists_the_start_up_work_rehearses_the_first_request(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    SessionStore.for_workspace(project).close()  # as an earlier run left it
    await initialize(bare_client, client_capabilities("visual-studio-code"), project,
                     options_for(model))
    messages = await start_up_done(bare_client)
    assert any("engine prepared in the background" in m for m in messages), messages
    assert model.requests == []  # the rehearsal is answered from memory

    model.load({"steps": [{"reply": {"text": "Ready."}}]})
    assert (await bare_client.chat("hello"))["text"] == "Ready."
    assert len(model.requests) == 1


async def test_a_chat_that_comes_first_is_not_raced_by_a_rehearsal(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    SessionStore.for_workspace(project).close()
    model.load({"steps": [{"reply": {"text": "First."}}]})
    await initialize(bare_client, client_capabilities("visual-studio-code"), project,
                     options_for(model))
    result = await bare_client.chat("hello")  # sent as soon as initialize is answered
    messages = await start_up_done(bare_client)
    assert result["text"] == "First."
    assert any("no rehearsal: a chat already started" in m for m in messages), messages
    assert len(model.requests) == 1
