"""Bad input to `agentls acp` (a real process): every bad message gets a JSON-RPC error and the
agent goes on answering; bad sessions, folders, prompts and two prompts at once are refused
with a reason."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import acp
from agentls.devtools.replay.command import ReplayServer
from tests.acp.acp_helpers import RecordingClient, initialized, make_project, scripted_env, spawned


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


class RawAgent:
    """The agent process with raw lines in and JSON messages out (no SDK in between)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        await self.process.stdin.drain()

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 20)
        assert line, "the agent closed its output"
        return json.loads(line)

    async def request(self, request_id: int, method: str, params: Any) -> dict[str, Any]:
        await self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                    "params": params}).encode())
        while True:
            message = await self.receive()
            if message.get("id") == request_id:
                return message


async def test_malformed_and_unknown_messages_get_errors(server: ReplayServer,
                                                         project: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "agentls", "acp", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env=scripted_env(server), cwd=str(project))
    agent = RawAgent(process)
    try:
        await agent.send(b"{not json")
        assert (await agent.receive())["error"]["code"] == -32700
        await agent.send(b"[1, 2]")
        assert (await agent.receive())["error"]["code"] == -32600
        await agent.send(b'{"jsonrpc": "2.0", "id": 5, "method": 7}')
        reply = await agent.receive()
        assert reply["id"] == 5 and reply["error"]["code"] == -32600
        unknown = await agent.request(6, "session/teleport", {})
        assert unknown["error"]["code"] == -32601
        bad_params = await agent.request(7, "session/new", {"cwd": 42})
        assert bad_params["error"]["code"] == -32602
        early = await agent.request(8, "session/prompt", {
            "sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]})
        assert "session/new" in early["error"]["data"]["message"]
        # Still answering after all of that.
        init = await agent.request(9, "initialize", {"protocolVersion": 1})
        assert init["result"]["protocolVersion"] == 1
        newer = await agent.request(10, "initialize", {"protocolVersion": 99})
        assert newer["result"]["protocolVersion"] == acp.PROTOCOL_VERSION
    finally:
        assert process.stdin is not None
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 20)
    assert process.returncode == 0


@pytest.mark.parametrize("cwd", ["/", "FILE", "MISSING", "relative/path"])
async def test_cwd_that_is_no_project_folder(server: ReplayServer, project: Path,
                                             cwd: str) -> None:
    given = {"FILE": str(project / "README.md"),
             "MISSING": str(project / "nowhere")}.get(cwd, cwd)
    client = RecordingClient()
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        with pytest.raises(acp.RequestError) as refused:
            await conn.new_session(cwd=given, mcp_servers=[])
    message = refused.value.data["message"]
    expected = {"/": "too wide", "FILE": "is a file", "MISSING": "does not exist",
                "relative/path": "absolute path"}[cwd]
    assert expected in message


async def test_two_prompts_at_once_the_second_is_refused(server: ReplayServer,
                                                         project: Path) -> None:
    server.load({"steps": [{"reply": {"text": "slow " * 50, "chunk_size": 5,
                                      "delay_s": 0.02}}]})
    client = RecordingClient()
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        first = asyncio.create_task(conn.prompt(session_id=session.session_id,
                                                prompt=[acp.text_block("one")]))
        while not client.of("agent_message_chunk"):
            await asyncio.sleep(0.01)
        with pytest.raises(acp.RequestError) as busy:
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("two")])
        assert (await first).stop_reason == "end_turn"
    assert "already answering a prompt" in str(busy.value)


async def test_huge_prompt_is_trimmed_with_a_note(server: ReplayServer, project: Path) -> None:
    server.load({"steps": [{"reply": {"text": "ok"}}]})
    client = RecordingClient()
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=session.session_id,
                          prompt=[acp.text_block("x" * 300_000)])
    thoughts = "".join(u.content.text for u in client.of("agent_thought_chunk"))
    assert "only its first 200,000 were sent" in thoughts
    assert len(server.requests[0].last_user_message) < 250_000


PIXEL = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVO"
         "RK5CYII=")  # a 1x1 PNG


async def test_an_image_for_a_model_that_takes_none_is_refused_clearly(
        server: ReplayServer, project: Path) -> None:
    server.load({"steps": [{"reply": {"text": "ok"}}]})
    client = RecordingClient()
    async with spawned(client, scripted_env(server), project) as (conn, _):
        init = await initialized(conn, client)
        assert init.agent_capabilities.prompt_capabilities.image is False
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        with pytest.raises(acp.RequestError) as refused:
            await conn.prompt(session_id=session.session_id, prompt=[
                acp.text_block("what is in this picture?"), acp.image_block(PIXEL, "image/png")])
        assert refused.value.code == -32602
        assert "does not take images" in str(refused.value.data)
        assert "backends.scripted.images = true" in str(refused.value.data)
        # Audio is never taken: left out with a note, the text still answered.
        answer = await conn.prompt(session_id=session.session_id, prompt=[
            acp.text_block("and this?"), acp.audio_block("AAAA", "audio/wav")])
    assert answer.stop_reason == "end_turn" and len(server.requests) == 1
    thoughts = "".join(u.content.text for u in client.of("agent_thought_chunk"))
    assert "the audio was not sent to the model" in thoughts


async def test_images_go_to_a_model_that_takes_them_as_image_parts(
        server: ReplayServer, project: Path) -> None:
    server.load({"steps": [{"times": 2, "reply": {"text": "A single pixel."}}]})
    client = RecordingClient()
    env = scripted_env(server, AGENTLS_BACKENDS__SCRIPTED__IMAGES="true")
    async with spawned(client, env, project) as (conn, _):
        init = await initialized(conn, client)
        assert init.agent_capabilities.prompt_capabilities.image is True
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[
            acp.text_block("what is in this picture?"), acp.image_block(PIXEL, "image/png"),
            acp.image_block(PIXEL, "image/tiff")])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("again")])
    first = server.requests[0].body["messages"][-1]["content"]
    assert first[0]["type"] == "text" and "what is in this picture?" in first[0]["text"]
    assert first[1:] == [{"type": "image_url",
                          "image_url": {"url": f"data:image/png;base64,{PIXEL}"}}]
    thoughts = "".join(u.content.text for u in client.of("agent_thought_chunk"))
    assert "image of type image/tiff was not sent" in thoughts
    # The next turn's history keeps a note of the image, not the image.
    earlier = next(m for m in server.requests[1].body["messages"] if m["role"] == "user")
    assert isinstance(earlier["content"], str) and PIXEL not in earlier["content"]
    assert "an image (image/png" in earlier["content"]


async def test_embedded_resource_is_read_as_the_editor_has_it(server: ReplayServer,
                                                              project: Path) -> None:
    server.load({"steps": [{"reply": {"text": "seen"}}]})
    client = RecordingClient()
    unsaved = "def add(a, b):\n    return a * b  # unsaved\n"
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[
            acp.text_block("look"),
            acp.resource_block(acp.embedded_text_resource(
                (project / "src" / "calc.py").as_uri(), unsaved)),
            acp.resource_link_block("util.py", (project / "src" / "util.py").as_uri())])
    sent = server.requests[0].last_user_message
    assert "return a * b  # unsaved" in sent
    assert "return x + x" in sent


async def test_secrets_never_reach_the_client(server: ReplayServer, project: Path) -> None:
    from tests.acp.acp_helpers import SECRET

    server.load({"steps": [{"reply": {"text": f"the key is {SECRET} ok"}}]})
    client = RecordingClient()
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("leak it")])
    shown = client.text()
    assert SECRET not in shown and "[REDACTED]" in shown


async def test_client_going_away_mid_turn_ends_the_agent(server: ReplayServer,
                                                         project: Path) -> None:
    """The editor closes the stream while a command runs: the turn is stopped, the command
    with it, and the process exits."""
    from tests.acp.test_acp_agent import _running

    marker = "32.75"
    server.load({"steps": [{"match": {"tool_results": False}, "reply": {"tool_calls": [
        {"id": "s1", "name": "shell_exec", "arguments": {"command": f"sleep {marker}"}}]}}]})
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "agentls", "acp", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env=scripted_env(server), cwd=str(project))
    agent = RawAgent(process)
    await agent.request(1, "initialize", {"protocolVersion": 1})
    session = (await agent.request(2, "session/new", {"cwd": str(project),
                                                      "mcpServers": []}))["result"]
    await agent.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                                 "params": {"sessionId": session["sessionId"],
                                            "prompt": [{"type": "text", "text": "wait"}]}
                                 }).encode())
    for _ in range(500):
        if _running(marker):
            break
        await asyncio.sleep(0.02)
    assert _running(marker)
    assert process.stdin is not None
    process.stdin.close()
    await asyncio.wait_for(process.wait(), 15)
    assert not _running(marker)
