"""`agentls acp` driven as a real process by the SDK's own Python client (``acp``), against the
scripted model server (not a real model): a turn that reads, edits two files and runs a
sandboxed command; the review (rejected, allowed through fs/write_text_file, allowed without
it, a client write that fails); cancel; load; modes and models."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from acp.schema import McpServerStdio, SessionNotification, SseMcpServer

import acp
from agentls.devtools.replay.command import ReplayServer
from agentls.sandbox.bwrap import probe
from tests.acp.acp_helpers import (
    SECRET,
    RecordingClient,
    cancelled_once,
    initialized,
    make_project,
    read_edit_run_steps,
    scripted_env,
    spawned,
)

pytestmark = pytest.mark.skipif(not probe().available, reason="no sandbox here")
ORIGINAL_CALC = "def add(a, b):\n    return a - b\n"
ORIGINAL_UTIL = "def double(x):\n    return x + x\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


def _validated(client: RecordingClient) -> None:
    """Every update, as JSON on the wire, is a valid SessionNotification of the SDK schema."""
    for note in client.updates:
        wire = note.model_dump(mode="json", by_alias=True, exclude_none=True)
        assert SessionNotification.model_validate(wire) == note
        assert SECRET not in str(wire)


async def test_turn_reads_edits_two_files_runs_a_sandboxed_command(
        server: ReplayServer, project: Path) -> None:
    server.load({"steps": read_edit_run_steps()})
    client = RecordingClient(permission="apply_all", fs_write=True)
    async with spawned(client, scripted_env(server), project) as (conn, _):
        init = await initialized(conn, client)
        assert init.protocol_version == acp.PROTOCOL_VERSION
        assert init.agent_capabilities.load_session
        assert init.agent_capabilities.prompt_capabilities.embedded_context
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id,
                                   prompt=[acp.text_block("fix add and double")])
    assert answer.stop_reason == "end_turn"
    _validated(client)
    assert "scripted model" in client.text()
    starts = {u.tool_call_id: u for u in client.of("tool_call")}
    assert starts["c1"].kind == "read" and starts["c1"].title == "Read src/calc.py"
    assert starts["c1"].locations[0].path == str(project / "src" / "calc.py")
    assert starts["c2"].kind == starts["c3"].kind == "edit"
    assert starts["c4"].kind == "execute"
    ends = {u.tool_call_id: u for u in client.of("tool_call_update")}
    calc_diff = ends["c2"].content[0]
    assert calc_diff.type == "diff" and calc_diff.old_text == ORIGINAL_CALC
    assert calc_diff.new_text == "def add(a, b):\n    return a + b\n"
    # The command ran in the sandbox over the pending edits, with no permission asked.
    assert ends["c4"].status == "completed"
    assert "1\n[exit code 0]" in ends["c4"].content[0].content.text
    assert len(client.permissions) == 1  # the review only
    tool_call, options = client.permissions[0]
    assert {d.path for d in tool_call.content} == {str(project / "src" / "calc.py"),
                                                   str(project / "src" / "util.py")}
    assert [o.option_id for o in options][:2] == ["apply_all", "reject_all"]
    assert any(o.name == "Apply only src/util.py" for o in options)
    # Both files written through the client's fs/write_text_file.
    assert [Path(p).name for p, _ in client.writes] == ["calc.py", "util.py"]
    assert (project / "src" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert (project / "src" / "util.py").read_text() == "def double(x):\n    return 2 * x\n"
    assert client.of("available_commands_update")[0].available_commands[0].name == "fix"


async def test_rejected_review_writes_nothing_and_the_model_is_told(
        server: ReplayServer, project: Path) -> None:
    again = {"match": {"user": "again"}, "reply": {"text": "Understood."}}
    server.load({"steps": [*read_edit_run_steps(), again]})
    client = RecordingClient(permission="reject_all")
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("fix it")])
        assert client.writes == []
        assert (project / "src" / "calc.py").read_text() == ORIGINAL_CALC
        assert (project / "src" / "util.py").read_text() == ORIGINAL_UTIL
        review = [u for u in client.of("tool_call_update")
                  if u.tool_call_id.startswith("review-")]
        assert review[-1].status == "failed"
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("again")])
    last = server.requests[-1].last_user_message
    assert "rejected your changes to src/calc.py, src/util.py" in last


async def test_allowed_without_client_fs_is_written_atomically(
        server: ReplayServer, project: Path) -> None:
    server.load({"steps": read_edit_run_steps()})
    client = RecordingClient(permission="apply_all", fs_write=False)
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("fix it")])
    assert client.writes == []
    assert (project / "src" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert (project / "src" / "util.py").read_text() == "def double(x):\n    return 2 * x\n"
    done = [u for u in client.of("tool_call_update") if u.tool_call_id.startswith("review-")]
    assert "Written to disk" in done[-1].content[0].content.text


async def test_only_one_file_kept(server: ReplayServer, project: Path) -> None:
    server.load({"steps": read_edit_run_steps()})
    client = RecordingClient(permission="only:1")
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("fix it")])
    assert (project / "src" / "calc.py").read_text() == ORIGINAL_CALC
    assert (project / "src" / "util.py").read_text() == "def double(x):\n    return 2 * x\n"


async def test_client_write_error_leaves_nothing_half_written(
        server: ReplayServer, project: Path) -> None:
    server.load({"steps": read_edit_run_steps()})
    client = RecordingClient(permission="apply_all", fail_write_on="util.py")
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id,
                                   prompt=[acp.text_block("fix it")])
    assert answer.stop_reason == "end_turn"
    # calc.py was written, then util.py failed: calc.py was put back through the client.
    assert [Path(p).name for p, _ in client.writes] == ["calc.py", "calc.py"]
    assert (project / "src" / "calc.py").read_text() == ORIGINAL_CALC
    assert (project / "src" / "util.py").read_text() == ORIGINAL_UTIL
    done = [u for u in client.of("tool_call_update") if u.tool_call_id.startswith("review-")]
    assert done[-1].status == "failed"
    assert "the editor refused to write" in done[-1].content[0].content.text


async def test_cancel_mid_stream(server: ReplayServer, project: Path) -> None:
    server.load({"steps": [{"reply": {"text": "word " * 400, "chunk_size": 5,
                                      "delay_s": 0.02}}]})
    client = RecordingClient()
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        turn = asyncio.create_task(conn.prompt(session_id=session.session_id,
                                               prompt=[acp.text_block("talk")]))
        await asyncio.wait_for(client.first_update.wait(), 20)
        while not client.of("agent_message_chunk"):
            await asyncio.sleep(0.01)
        await conn.cancel(session_id=session.session_id)
        answer = await asyncio.wait_for(turn, 10)
    assert answer.stop_reason == "cancelled"
    live = client.text()
    assert 0 < len(live) < len("word " * 400)
    # session/load shows the cut answer again, then AgentLS's note that it was cancelled.
    again = RecordingClient()
    async with spawned(again, scripted_env(server), project) as (conn, _):
        await initialized(conn, again)
        await conn.load_session(cwd=str(project), session_id=session.session_id,
                                mcp_servers=[])
    assert again.text() == live
    thoughts = [u.content.text for u in again.of("agent_thought_chunk")]
    assert thoughts == ["AgentLS: cancelled here\n"]
    kinds = [n.update.session_update for n in again.updates]
    assert kinds.index("user_message_chunk") < kinds.index("agent_message_chunk") < \
        kinds.index("agent_thought_chunk")


async def test_cancel_while_the_permission_is_never_answered(
        server: ReplayServer, project: Path) -> None:
    server.load({"steps": read_edit_run_steps()})
    client = RecordingClient(permission=None)
    answer = await cancelled_once(server, project, client, "fix it", client.asked,
                                  answer_within=10)
    assert answer.stop_reason == "cancelled"
    assert client.writes == []
    assert (project / "src" / "calc.py").read_text() == ORIGINAL_CALC


async def test_load_replays_the_session_and_list_finds_it(
        server: ReplayServer, project: Path) -> None:
    server.load({"steps": [{"reply": {"text": "Hello from the scripted model."}}]})
    first = RecordingClient()
    env = scripted_env(server)
    async with spawned(first, env, project) as (conn, _):
        await initialized(conn, first)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("say hello")])
        await conn.set_session_mode(session_id=session.session_id, mode_id="edit")
    second = RecordingClient()
    async with spawned(second, env, project) as (conn, _):
        await initialized(conn, second)
        listed = await conn.list_sessions(cwd=str(project))
        assert session.session_id in [s.session_id for s in listed.sessions]
        loaded = await conn.load_session(cwd=str(project), session_id=session.session_id,
                                         mcp_servers=[])
        assert loaded.modes.current_mode_id == "edit"  # kept with the session
        with pytest.raises(acp.RequestError) as unknown:
            await conn.load_session(cwd=str(project), session_id="nope", mcp_servers=[])
    assert "no session 'nope'" in str(unknown.value.data)
    users = [u.content.text for u in second.of("user_message_chunk")]
    assert any("say hello" in text for text in users)
    assert "Hello from the scripted model." in second.text()


async def test_modes_and_models(server: ReplayServer, project: Path) -> None:
    server.load({"models": ["scripted-model", "other-model"], "steps": [
        {"reply": {"text": "one"}}, {"reply": {"text": "two"}}]})
    client = RecordingClient()
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        assert session.modes.current_mode_id == "agent"
        assert [m.id for m in session.modes.available_modes] == ["ask", "edit", "agent"]
        models = next(o for o in session.config_options if o.id == "model")
        assert {"scripted", "other"} <= {o.value for o in models.options}
        await conn.set_session_mode(session_id=session.session_id, mode_id="ask")
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("q1")])
        await conn.set_config_option(config_id="model", session_id=session.session_id,
                                     value="other")
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("q2")])
        with pytest.raises(acp.RequestError):
            await conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
    ask_tools = {t["function"]["name"] for t in server.requests[0].body["tools"]}
    assert "shell_exec" not in ask_tools and "edit_file" not in ask_tools
    assert "read_file" in ask_tools
    assert server.requests[0].body["model"] == "scripted-model"
    assert server.requests[1].body["model"] == "other-model"
    assert client.of("current_mode_update")[0].current_mode_id == "ask"


async def test_reads_go_through_the_client_buffer(server: ReplayServer, project: Path) -> None:
    """A client offering fs/read_text_file: the agent reads (and edits) the editor's unsaved
    text, and the review's diff starts from it."""
    calc = project / "src" / "calc.py"
    unsaved = "def add(a, b):\n    return a * b  # unsaved\n"
    server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            {"id": "r1", "name": "read_file", "arguments": {"path": "src/calc.py"}}]}},
        {"match": {"tool": "read_file"}, "reply": {"tool_calls": [
            {"id": "e1", "name": "edit_file", "arguments": {"path": "src/calc.py", "edits": [
                {"search": "return a * b  # unsaved", "replace": "return a + b"}]}}]}},
        {"match": {"tool": "edit_file"}, "reply": {"text": "Done."}},
    ]})
    client = RecordingClient(buffers={str(calc): unsaved})
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("fix it")])
    assert client.reads == [str(calc)]
    assert "return a * b  # unsaved" in json.dumps(server.requests[1].body["messages"][-1])
    review, _ = client.permissions[0]
    assert review.content[0].old_text == unsaved
    assert client.writes == [(str(calc), "def add(a, b):\n    return a + b\n")]


async def test_mcp_servers_from_session_new(server: ReplayServer, project: Path) -> None:
    """The client's MCP servers join the session's tools through the engine's MCP hub: a real
    stdio server (mcp-server-time, sandboxed), its call asked about under the policy."""
    time_server = Path(sys.executable).parent / "mcp-server-time"
    server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            {"id": "m1", "name": "mcp__time__get_current_time",
             "arguments": {"timezone": "Europe/Paris"}}]}},
        {"match": {"tool": "mcp__time__get_current_time"}, "reply": {"text": "It is late."}},
    ]})
    client = RecordingClient(permission="allow_once")
    async with spawned(client, scripted_env(server), project) as (conn, _):
        init = await initialized(conn, client)
        assert init.agent_capabilities.mcp_capabilities.http is True
        session = await conn.new_session(cwd=str(project), mcp_servers=[
            McpServerStdio(name="time", command=str(time_server),
                           args=["--local-timezone", "UTC"], env=[]),
            SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[])])
        answer = await conn.prompt(session_id=session.session_id,
                                   prompt=[acp.text_block("what time is it?")])
    assert answer.stop_reason == "end_turn"
    names = {t["function"]["name"] for t in server.requests[0].body["tools"]}
    assert "mcp__time__get_current_time" in names
    result = next(m for m in server.requests[1].body["messages"] if m["role"] == "tool")
    assert "Europe/Paris" in result["content"]
    asked, _ = client.permissions[0]
    assert "get_current_time" in json.dumps(asked.model_dump(mode="json"))
    start = next(u for u in client.of("tool_call") if u.tool_call_id == "m1")
    assert start.title == "get_current_time (time MCP server)"
    thoughts = "".join(u.content.text for u in client.of("agent_thought_chunk"))
    assert "'old' was left out" in thoughts


async def test_cancel_stops_a_running_command(server: ReplayServer, project: Path) -> None:
    marker = "31.25"  # a sleep no one else runs, to find its process
    server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            {"id": "s1", "name": "shell_exec", "arguments": {"command": f"sleep {marker}"}}]}},
        {"match": {"tool": "shell_exec"}, "reply": {"text": "slept"}},
    ]})
    client = RecordingClient()
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        turn = asyncio.create_task(conn.prompt(session_id=session.session_id,
                                               prompt=[acp.text_block("wait")]))
        for _ in range(500):
            if _running(marker):
                break
            await asyncio.sleep(0.02)
        assert _running(marker), "the command never started"
        started = asyncio.get_running_loop().time()
        await conn.cancel(session_id=session.session_id)
        answer = await asyncio.wait_for(turn, 10)
        assert asyncio.get_running_loop().time() - started < 5
        for _ in range(100):
            if not _running(marker):
                break
            await asyncio.sleep(0.05)
    assert answer.stop_reason == "cancelled"
    assert not _running(marker), "the command outlived the cancel"


def _running(marker: str) -> bool:
    """Whether a process whose command line is ``sleep <marker>`` exists (read from /proc)."""
    for proc in Path("/proc").iterdir():
        try:
            words = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if Path(words[0].decode(errors="replace")).name == "sleep" and marker.encode() in words:
            return True
    return False


async def test_model_reasoning_is_streamed_as_thought_chunks(server: ReplayServer,
                                                            project: Path) -> None:
    thinking = "The person wants a greeting; a short one will do."
    server.load({"steps": [
        {"reply": {"reasoning": thinking, "text": "Hello!", "chunk_size": 7}},
        {"match": {"user": "again"}, "reply": {"text": "Hi again."}},
    ]})
    client = RecordingClient()
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("greet me")])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("again")])
    _validated(client)
    thoughts = "".join(u.content.text for u in client.of("agent_thought_chunk")
                       if not u.content.text.startswith("AgentLS: "))
    assert thoughts == thinking
    assert client.text() == "Hello!Hi again."
    # The thinking is shown, never sent back to the model as part of the answer.
    assert thinking not in json.dumps(server.requests[1].body["messages"])
    order = [u.session_update for u in (n.update for n in client.updates)
             if u.session_update in ("agent_thought_chunk", "agent_message_chunk")]
    assert order.index("agent_message_chunk") > order.index("agent_thought_chunk")


@pytest.mark.parametrize(("reply", "stop"), [
    ({"refusal": "I can't help with that."}, "refusal"),
    ({"text": "cut", "finish_reason": "content_filter"}, "refusal"),
    ({"times": "*", "text": "and more ", "finish_reason": "length"}, "max_tokens"),
])
async def test_refusal_and_max_tokens_are_the_stop_reason(
        server: ReplayServer, project: Path, reply: dict[str, object], stop: str) -> None:
    times = reply.pop("times", 1)
    server.load({"steps": [{"times": times, "reply": reply}]})
    client = RecordingClient()
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id,
                                   prompt=[acp.text_block("go")])
    assert answer.stop_reason == stop
    _validated(client)
    if "refusal" in reply:
        assert client.text() == reply["refusal"]


async def test_the_models_plan_is_sent_as_plan_updates_and_replayed(
        server: ReplayServer, project: Path) -> None:
    def plan(*statuses: str) -> dict[str, object]:
        steps = ["Read calc.py", "Fix add"]
        return {"plan": [{"step": s, "status": t} for s, t in zip(steps, statuses, strict=True)]}

    server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"text": "Planning.", "tool_calls": [
            {"id": "p1", "name": "update_plan", "arguments": plan("in_progress", "pending")},
            {"id": "r1", "name": "read_file", "arguments": {"path": "src/calc.py"}}]}},
        {"match": {"tool": "read_file"}, "reply": {"tool_calls": [
            {"id": "p2", "name": "update_plan", "arguments": {"plan": [{"step": "x"}]}}]}},
        {"match": {"tool": "update_plan"}, "reply": {"tool_calls": [
            {"id": "p3", "name": "update_plan", "arguments": plan("completed", "completed")}]}},
        {"match": {"tool": "update_plan"}, "reply": {"text": "Done."}},
    ]})
    client = RecordingClient()
    env = scripted_env(server)
    async with spawned(client, env, project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id,
                                   prompt=[acp.text_block("plan and fix")])
    _validated(client)
    plans = [[(e.content, e.status) for e in u.entries] for u in client.of("plan")]
    assert plans[0] == [("Read calc.py", "in_progress"), ("Fix add", "pending")]
    assert plans[-1] == [("Read calc.py", "completed"), ("Fix add", "completed")]
    # The plan calls are the plan, not tool calls; the malformed one was told to the model.
    assert {u.tool_call_id for u in client.of("tool_call")} == {"r1"}
    offered = [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert "update_plan" in offered
    told = json.loads(next(m["content"] for m in server.requests[2].body["messages"]
                           if m.get("tool_call_id") == "p2"))
    assert told["error"] == "INVALID_ARGUMENTS"
    assert answer.stop_reason == "end_turn" and client.text() == "Planning.\n\nDone."
    again = RecordingClient()
    async with spawned(again, env, project) as (conn, _):
        await initialized(conn, again)
        await conn.load_session(cwd=str(project), session_id=session.session_id,
                                mcp_servers=[])
    replayed = [[(e.content, e.status) for e in u.entries] for u in again.of("plan")]
    assert replayed[0] == plans[0] and replayed[-1] == plans[-1]
    assert {u.tool_call_id for u in again.of("tool_call")} == {"r1"}
