"""`agentls run` against every streaming shape real model servers produce (issue 38): the
scripted server serves each (devtools/replay/wire.py says whose shape it is); each run ends
with the edit made, or with a clear reason and what to do, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.cli.headless_helpers import agentls, call, last_json

from agentls.devtools.replay.command import ReplayServer

FIX = call("edit_file", "c1", path="src/calc.py",
           edits=[{"search": "return a - b", "replace": "return a + b"}])
TITLE = call("edit_file", "c2", path="README.md",
             edits=[{"search": "# calc", "replace": "# calculator"}])
OLLAMA_NO_TOOLS = {"status": 400, "body": {"error": {
    "message": "registry.ollama.ai/library/gemma3:4b does not support tools",
    "type": "api_error", "param": None, "code": None}}}


def script(reply: dict[str, Any], *, after: dict[str, Any] | None = None) -> dict[str, Any]:
    """One answer with the calls in ``reply``'s shape, then "Done." once results come back."""
    return {"steps": [
        {"name": "calls", "match": {"tool_results": False, "user": "/Fix/"}, "reply": reply},
        {"name": "done", "match": after or {"tool_results": True}, "reply": {"text": "Done."}},
    ]}


def run(server: ReplayServer, env: dict[str, str], project: Path,
        *flags: str) -> tuple[Any, dict[str, Any]]:
    done = agentls("run", "-p", "Fix add in src/calc.py", "--cwd", str(project), "--json",
                   *flags, env=env)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    return done, last_json(done.stdout)


def assert_fixed(done: Any, result: dict[str, Any], project: Path, server: ReplayServer,
                 *, title: bool = False) -> None:
    assert done.returncode == 0, (done.stderr, result)
    assert result["status"] == "done", result
    assert "return a + b" in (project / "src" / "calc.py").read_text()
    if title:
        assert (project / "README.md").read_text().startswith("# calculator")
    assert server.remaining_steps() == []


SHAPES: dict[str, dict[str, Any]] = {
    "standard": {"tool_calls": [FIX]},
    "whole call in one chunk, finish stop": {"tool_calls": [FIX], "call_shape": "whole",
                                             "finish_reason": "stop"},
    "reasoning_content deltas": {"reasoning": "The sign is wrong.", "tool_calls": [FIX]},
    "reasoning deltas": {"reasoning": "The sign is wrong.", "reasoning_field": "reasoning",
                         "tool_calls": [FIX]},
    "empty first chunk": {"tool_calls": [FIX], "empty_first_chunk": True},
    "no [DONE]": {"tool_calls": [FIX], "done_marker": False},
    "arguments as an object": {"tool_calls": [FIX], "arguments_as": "object"},
    "arguments encoded twice": {"tool_calls": [FIX], "arguments_as": "double"},
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_makes_the_edit(shape: str, server: ReplayServer, env: dict[str, str],
                                   project: Path) -> None:
    server.load(script(SHAPES[shape]))
    done, result = run(server, env, project)
    assert_fixed(done, result, project, server)


PARALLEL: dict[str, dict[str, Any]] = {
    "interleaved by index": {"tool_calls": [FIX, TITLE], "interleave_tool_calls": True,
                             "chunk_size": 5},
    "no ids": {"tool_calls": [FIX, TITLE], "omit_call_ids": True},
    "no ids, interleaved": {"tool_calls": [FIX, TITLE], "omit_call_ids": True,
                            "interleave_tool_calls": True},
    "one index for every whole call": {"tool_calls": [FIX, TITLE], "call_shape": "whole",
                                       "same_index": True, "omit_call_ids": True},
}


@pytest.mark.parametrize("shape", sorted(PARALLEL))
def test_parallel_calls_each_shape(shape: str, server: ReplayServer, env: dict[str, str],
                                   project: Path) -> None:
    server.load(script(PARALLEL[shape]))
    done, result = run(server, env, project)
    assert_fixed(done, result, project, server, title=True)
    answered = server.requests[-1].body["messages"]
    calls = [c for m in answered if m["role"] == "assistant" for c in m.get("tool_calls") or ()]
    results = [m["tool_call_id"] for m in answered if m["role"] == "tool"]
    assert len(calls) == 2 and len({c["id"] for c in calls}) == 2  # told apart
    assert sorted(results) == sorted(c["id"] for c in calls)


@pytest.mark.parametrize("form", ["hermes", "mistral", "mistral_v11", "json", "fenced"])
def test_calls_written_as_text_are_run(form: str, server: ReplayServer, env: dict[str, str],
                                       project: Path) -> None:
    text = "" if form == "json" else "I will fix the sign."
    server.load(script({"text": text, "tool_calls": [FIX], "text_tool_calls": form}))
    done, result = run(server, env, project)
    assert_fixed(done, result, project, server)
    assert "did not parse the model's tool calls" in done.stderr  # told to the person
    shown = agentls("sessions", "show", result["sessionId"], "--json", "--cwd",
                    str(project), env=env)
    messages = json.loads(shown.stdout)["messages"]
    calling = next(m for m in messages if m.get("toolCalls") or m.get("tool_calls"))
    assert calling["metadata"]["calls_from_text"] == form.removesuffix("_v11")
    assert "did not parse" in calling["metadata"]["note"]  # the record says so
    assert "<tool_call>" not in json.dumps(calling.get("content"))


def test_an_unreadable_text_call_stops_with_the_reason(server: ReplayServer,
                                                       env: dict[str, str],
                                                       project: Path) -> None:
    wrong = call("edit_the_file", "c1", path="src/calc.py")
    server.load({"steps": [{"reply": {"tool_calls": [wrong], "text_tool_calls": "hermes"}}]})
    done, result = run(server, env, project)
    assert done.returncode == 1 and result["status"] == "failed"
    error = result["error"]
    assert error["kind"] == "tool_calls_unread" and "'edit_the_file'" in error["message"]
    assert "--jinja" in error["hint"] and 'backends.scripted.tool_calls = "text"' in error["hint"]
    assert "return a - b" in (project / "src" / "calc.py").read_text()


def test_a_server_refusing_tools_falls_back_to_text(server: ReplayServer, env: dict[str, str],
                                                    project: Path) -> None:
    server.load({"steps": [
        {"name": "refuses", "match": {"tools": True}, "times": "*", "error": OLLAMA_NO_TOOLS},
        {"name": "calls", "match": {"tools": False, "user": "/Fix/"},
         "reply": {"text": "Fixing.", "tool_calls": [FIX], "text_tool_calls": "hermes"}},
        {"name": "done", "match": {"tools": False, "user": "/tool result/"},
         "reply": {"text": "Done."}},
    ]})
    done, result = run(server, env, project)  # tool_calls = "auto", the default
    assert_fixed(done, result, project, server)
    assert "takes no tools" in done.stderr
    asked = server.requests[-1].body
    assert "tools" not in asked
    assert "<tool_call>" in asked["messages"][0]["content"] or any(
        "edit_file" in m["content"] for m in asked["messages"] if m["role"] == "system")
    assert any(m["role"] == "assistant" and "<tool_call>" in m["content"]
               for m in asked["messages"])  # the call written back in the text protocol


def test_a_server_refusing_tools_in_native_mode_says_what_to_do(
        server: ReplayServer, env: dict[str, str], project: Path) -> None:
    server.load({"steps": [{"match": {"tools": True}, "error": OLLAMA_NO_TOOLS}]})
    native = {**env, "AGENTLS_BACKENDS__SCRIPTED__TOOL_CALLS": "native"}
    done, result = run(server, native, project)
    assert done.returncode == 1 and result["error"]["kind"] == "tools_unsupported"
    hint = result["error"]["hint"]
    assert 'backends.scripted.tool_calls = "text"' in hint and "`ask` mode" in hint
    assert "malformed" not in hint


def test_text_mode_sends_no_tools(server: ReplayServer, env: dict[str, str],
                                  project: Path) -> None:
    server.load({"steps": [
        {"name": "calls", "match": {"tools": False, "user": "/Fix/"},
         "reply": {"tool_calls": [FIX], "text_tool_calls": "hermes"}},
        {"name": "done", "match": {"tools": False, "user": "/tool result/"},
         "reply": {"text": "Done."}},
    ]})
    text = {**env, "AGENTLS_BACKENDS__SCRIPTED__TOOL_CALLS": "text"}
    done, result = run(server, text, project)
    assert_fixed(done, result, project, server)
    assert all("tools" not in r.body for r in server.requests)
