"""The agent loop end to end: real backend, real tools, scripted model answers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agentls.engine.events import RecordingFrontend, ToolResultEvent
from agentls.engine.loop.agent import RunRequest
from agentls.sandbox.bwrap import SandboxSettings
from agentls.tools.permission_gate import ApprovalRequest
from agentls.workspace.fence import Workspace
from tests.engine.conftest import Harness


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def tool_results(request_body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tool results a request carried, by tool_call_id, parsed."""
    return {m["tool_call_id"]: json.loads(m["content"]) for m in request_body["messages"]
            if m["role"] == "tool"}


async def test_multi_step_run_reads_searches_edits_two_files(harness: Harness) -> None:
    harness.server.load({"steps": [
        {"match": {"user": "fix add", "tool_results": False}, "reply": {
            "text": "Looking.", "tool_calls": [
                call("read_file", "c1", path="src/calc.py"),
                call("search_text", "c2", query="add("),
            ]}},
        {"match": {"tool": "search_text"}, "reply": {"tool_calls": [
            call("edit_file", "c3", path="src/calc.py",
                 edits=[{"search": "return a - b", "replace": "return a + b"}]),
            call("apply_patch", "c4", patch="*** Begin Patch\n*** Update File: src/main.py\n"
                 "@@\n-print(add(1, 2))\n+print(add(2, 2))\n*** End Patch\n"),
        ]}},
        {"match": {"tool": "apply_patch"}, "reply": {"text": "Fixed add and updated main."}},
    ]})
    result, front = await harness.run("please fix add")
    assert result.stop_reason == "done", result.error_message
    assert result.iterations == 3
    assert result.text == "Looking.\n\nFixed add and updated main."
    assert front.text() == result.text
    assert {str(p.relative_to(harness.root)) for p in result.changeset.paths()} == {
        "src/calc.py", "src/main.py"}
    assert (harness.root / "src" / "calc.py").read_text().endswith("a - b\n")  # not on disk
    second = tool_results(harness.server.requests[1].body)
    assert "return a - b" in second["c1"]["content"]
    assert second["c2"]["ok"] and second["c2"]["count"] >= 1
    third = tool_results(harness.server.requests[2].body)
    assert third["c3"]["ok"] and third["c4"]["ok"]
    kinds = [e.kind for e in front.events]
    assert kinds.count("toolCall") == 4 and kinds.count("toolResult") == 4
    assert kinds[-2:] == ["edit", "done"]
    stored = harness.store.history(result.session_id)
    assert stored[-1].kind == "actions"
    assert "edited src/calc.py (+1 −1)" in (stored[-1].message.content or "")
    assert result.usage.prompt_tokens > 0


async def test_read_only_calls_of_one_turn_run_concurrently(harness: Harness) -> None:
    harness.server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("shell_exec", "s1", command="ls"),  # allow-listed, does not need approval
            call("read_file", "r1", path="README.md"),
            call("read_file", "r2", path="src/calc.py"),
        ]}},
        {"match": {"tool_results": True}, "reply": {"text": "done"}},
    ]})
    order: list[str] = []
    front = RecordingFrontend()
    original = front.on_event

    def spy(event: Any) -> None:
        if isinstance(event, ToolResultEvent):
            order.append(event.call_id)
        original(event)

    front.on_event = spy  # type: ignore[method-assign]
    result, _ = await harness.run("look", frontend=front)
    assert result.stop_reason == "done"
    assert order[0] == "s1" and set(order[1:]) == {"r1", "r2"}
    results = tool_results(harness.server.requests[1].body)
    assert list(results) == ["s1", "r1", "r2"]  # results go back in call order


async def test_malformed_json_and_unknown_tool_are_told_to_the_model(harness: Harness) -> None:
    harness.server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            {"id": "m1", "name": "read_file", "arguments": '{"path": "README.md"'},
            {"id": "m2", "name": "teleport", "arguments": {"to": "mars"}},
        ]}},
        {"match": {"tool_results": True}, "reply": {"text": "sorry"}},
    ]})
    result, _ = await harness.run("go")
    assert result.stop_reason == "done"
    results = tool_results(harness.server.requests[1].body)
    assert results["m1"]["error"] == "INVALID_ARGUMENTS" and "schema" in results["m1"]
    assert results["m2"]["error"] == "UNKNOWN_TOOL"


async def test_length_continuation_keeps_partial_text(harness: Harness) -> None:
    harness.server.load({"steps": [
        {"match": {"user": "essay"}, "reply": {"text": "Part one, ", "finish_reason": "length"}},
        {"match": {"user": "cut off"}, "reply": {"text": "part two."}},
    ]})
    result, _ = await harness.run("write an essay")
    assert result.stop_reason == "done" and result.text == "Part one, part two."
    assert result.iterations == 2


async def test_still_cut_after_the_continuations_stops_with_max_tokens(
        harness: Harness) -> None:
    harness.server.load({"steps": [{"times": "*", "reply": {"text": "more, ",
                                                            "finish_reason": "length"}}]})
    result, front = await harness.run("write an essay")
    assert result.stop_reason == "max_tokens" and result.iterations == 3
    assert result.text == "more, more, more, "  # what came is kept and shown
    assert any(e.kind == "status" and e.warning and "output limit" in e.message
               for e in front.events)


async def test_a_refusal_is_the_answer_and_the_stop_reason(harness: Harness) -> None:
    harness.server.load({"steps": [{"reply": {"refusal": "I can't help with that."}}]})
    result, front = await harness.run("do something bad")
    assert result.stop_reason == "refusal"
    assert result.text == front.text() == "I can't help with that."
    assert any(e.kind == "status" and e.warning and "refused" in e.message
               for e in front.events)


async def test_a_content_filter_stop_is_a_refusal(harness: Harness) -> None:
    harness.server.load({"steps": [{"reply": {"text": "Well", "finish_reason":
                                              "content_filter"}}]})
    result, front = await harness.run("go")
    assert result.stop_reason == "refusal" and result.text == "Well"
    assert any(e.kind == "status" and "content filter" in e.message for e in front.events)


async def test_truncated_tool_call_is_reported_as_cut_off(harness: Harness) -> None:
    harness.server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"finish_reason": "length", "tool_calls": [
            {"id": "t1", "name": "write_file", "arguments": '{"path": "a.py", "content": "x'}]}},
        {"match": {"tool_results": True}, "reply": {"text": "ok"}},
    ]})
    result, _ = await harness.run("write")
    assert tool_results(harness.server.requests[1].body)["t1"]["error"] == "CUT_OFF"
    assert result.changeset.is_empty()


async def test_same_call_three_times_stops_with_no_progress(harness: Harness) -> None:
    harness.server.load({"steps": [{"times": "*", "reply": {"tool_calls": [
        call("read_file", "x", path="README.md")]}}]})
    result, _ = await harness.run("loop forever")
    assert result.stop_reason == "no_progress" and result.iterations == 3


async def test_max_iterations(harness: Harness) -> None:
    harness.server.load({"steps": [{"times": "*", "reply": {"tool_calls": [
        call("list_files", "x", path="src", recursive=True)]}}]})
    harness.agent.settings = harness.agent.settings.model_copy(update={"max_iterations": 2})
    result, _ = await harness.run("keep listing", max_iterations=2)
    assert result.stop_reason == "max_iterations" and result.iterations == 2


async def test_cancel_mid_stream_stops_fast_and_keeps_the_session_valid(
    harness: Harness
) -> None:
    harness.server.load({"steps": [
        {"match": {"user": "slow"}, "reply": {"text": "x" * 200, "chunk_size": 1,
                                              "delay_s": 0.05, "tool_calls": [
                                                  call("read_file", "c1", path="README.md")]}},
        {"match": {"user": "next"}, "reply": {"text": "fine"}},
    ]})
    sid = harness.session()
    front = RecordingFrontend()
    task = asyncio.create_task(harness.agent.run(sid, RunRequest("slow please"), front,
                                                 Workspace([harness.root]), run_id="r-1"))
    while not front.of("text"):
        await asyncio.sleep(0.01)
    assert harness.agent.cancel("r-1")
    result = await task
    # Stopped mid-stream (the whole reply takes 10 s); how fast is measured by `make bench`.
    assert 0 < len(front.text()) < 200
    assert result.stop_reason == "cancelled" and not result.send_changes
    # What was streamed is kept, marked as cut by the cancel (the calls never came).
    assert result.text == front.text()
    kept = harness.store.history(sid)[-1]
    assert kept.message.role == "assistant" and kept.message.content == front.text()
    assert kept.metadata["stopped"] == "cancelled" and not kept.message.tool_calls
    follow, _ = await harness.run("next", session_id=sid)
    assert follow.stop_reason == "done"
    sent = harness.server.requests[-1].body["messages"]
    assert sent[-2] == {"role": "assistant", "content": front.text()}


def ask_for_commands(harness: Harness) -> None:
    """Sandboxed commands run without asking: these tests are about asking."""
    harness.agent.settings = harness.agent.settings.model_copy(
        update={"sandbox": SandboxSettings(ask=True)})


async def test_rejected_shell_then_recovery(harness: Harness) -> None:
    harness.server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("shell_exec", "s1", command="python -m pip install requests")]}},
        {"match": {"tool": "shell_exec"}, "reply": {"tool_calls": [
            call("read_file", "r1", path="README.md")]}},
        {"match": {"tool": "read_file"}, "reply": {"text": "I read the README instead."}},
    ]})
    asked: list[ApprovalRequest] = []

    class Denier(RecordingFrontend):
        async def confirm(self, request: ApprovalRequest) -> Any:
            asked.append(request)
            return "deny"

    ask_for_commands(harness)
    result, _ = await harness.run("install", frontend=Denier(interactive=True))
    assert asked and "pip install" in asked[0].title
    assert tool_results(harness.server.requests[1].body)["s1"]["error"] == "USER_REJECTED"
    assert result.stop_reason == "done" and result.text.endswith("README instead.")


async def test_ask_user_interactive_and_automation(harness: Harness) -> None:
    script = {"steps": [
        {"match": {"tool_results": False}, "times": 2, "reply": {"tool_calls": [
            call("ask_user", "q1", question="Tabs or spaces?", options=["tabs", "spaces"])]}},
        {"match": {"tool": "ask_user"}, "times": 2, "reply": {"text": "noted"}},
    ]}
    harness.server.load(script)

    class Chooser(RecordingFrontend):
        async def ask(self, question: str, options: list[str]) -> str | None:
            return options[1]

    await harness.run("style?", frontend=Chooser(interactive=True))
    assert tool_results(harness.server.requests[1].body)["q1"] == {"ok": True,
                                                                   "answer": "spaces"}
    await harness.run("style?", session_id=harness.session("automation"))
    assert tool_results(harness.server.requests[3].body)["q1"]["error"] == "NO_ONE_TO_ASK"


async def test_backend_error_is_an_error_result_not_a_crash(harness: Harness) -> None:
    harness.server.load({"steps": [{"error": {"status": 401}}]})
    result, front = await harness.run("hi")
    assert result.stop_reason == "error" and result.error is not None
    assert result.error.kind == "auth"
    assert front.of("error") and front.of("done")


async def test_context_too_long_trims_harder_and_retries_once(harness: Harness) -> None:
    sid = harness.session()
    harness.server.load({"steps": [{"times": 6, "reply": {"text": "ok " * 50}}]})
    for i in range(6):
        await harness.run(f"question {i} " + "filler " * 200, session_id=sid)
    harness.server.load({"steps": [
        {"error": {"status": 400, "body": {"error": {
            "message": "This model's maximum context length is 100 tokens.",
            "code": "context_length_exceeded"}}}},
        {"reply": {"text": "fits now"}},
    ]})
    before = len(harness.server.requests)
    result, _ = await harness.run("last question", session_id=sid)
    assert result.stop_reason == "done" and result.text == "fits now"
    sent = [len(r.body["messages"]) for r in harness.server.requests[before:]]
    assert sent[1] < sent[0]


async def test_long_session_stays_under_budget_with_tool_pairs_intact(
    harness: Harness
) -> None:
    from agentls.llm.messages import Message, ToolCall

    sid = harness.session()
    for i in range(75):  # 300 stored messages with big tool outputs
        harness.store.append(sid, Message.user(f"step {i}"))
        harness.store.append(sid, Message.assistant(None, [ToolCall(f"c{i}", "read_file",
                                                                    '{"path": "x"}')]))
        harness.store.append(sid, Message.tool(f"c{i}", "data " * 400, "read_file"))
        harness.store.append(sid, Message.assistant(f"answer {i}"))
    harness.agent.settings = harness.agent.settings.model_copy(
        update={"compaction": harness.agent.settings.compaction.model_copy(
            update={"max_messages": 100_000})})
    # Over 90% of the budget even after trimming: the older part is summarised first.
    harness.server.load({"steps": [
        {"match": {"stream": False}, "reply": {"text": "Steps 0 to 60 read x."}},
        {"reply": {"text": "fine"}},
    ]})
    result, _ = await harness.run("and now?", session_id=sid)
    assert result.stop_reason == "done"
    assert harness.server.requests[0].body.get("stream") in (None, False)
    body = harness.server.requests[-1].body
    assert "Steps 0 to 60 read x." in body["messages"][1]["content"]
    sent = body["messages"]
    assert len(sent) < 300 and sent[-1]["content"].endswith("and now?")
    ids = {c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls") or []}
    answered = {m["tool_call_id"] for m in sent if m["role"] == "tool"}
    assert ids == answered
    usage = harness.server.requests[-1]
    assert usage.status == 200


async def test_compaction_summarises_the_older_part(harness: Harness) -> None:
    from agentls.llm.messages import Message

    sid = harness.session()
    for i in range(70):
        harness.store.append(sid, Message.user(f"turn {i}"))
        harness.store.append(sid, Message.assistant(f"reply {i}"))
    harness.server.load({"steps": [
        {"match": {"stream": False}, "reply": {"text": "We discussed turns 0 to 60."}},
        {"reply": {"text": "continuing"}},
    ]})
    result, _ = await harness.run("go on", session_id=sid)
    assert result.stop_reason == "done"
    stored = harness.store.history(sid)
    assert any(m.kind == "summary" for m in stored)
    sent = harness.server.requests[-1].body["messages"]
    assert "We discussed turns 0 to 60." in sent[1]["content"]
    assert len(sent) < 60


async def test_session_on_an_unconfigured_backend_is_an_error_result(harness: Harness) -> None:
    sid = harness.store.create_session(backend="gone", model="m").id
    result, front = await harness.run("hi", session_id=sid)
    assert result.stop_reason == "error" and "no backend named 'gone'" in result.error_message
    assert front.of("error")


async def test_permissions_come_from_the_settings(harness: Harness) -> None:
    from agentls.tools.permission_gate import PermissionPolicy

    harness.agent.settings = harness.agent.settings.model_copy(
        update={"permissions": PermissionPolicy(tools={"read_file": "deny"})})
    harness.server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("read_file", "r1", path="README.md")]}},
        {"match": {"tool_results": True}, "reply": {"text": "ok"}},
    ]})
    await harness.run("read it")
    assert tool_results(harness.server.requests[1].body)["r1"]["error"] == "USER_REJECTED"


async def test_context_too_long_trim_is_kept_for_the_next_steps(harness: Harness) -> None:
    sid = harness.session()
    harness.server.load({"steps": [{"times": 6, "reply": {"text": "ok " * 50}}]})
    for i in range(6):
        await harness.run(f"question {i} " + "filler " * 200, session_id=sid)
    harness.server.load({"steps": [
        {"error": {"status": 400, "body": {"error": {
            "message": "This model's maximum context length is 100 tokens.",
            "code": "context_length_exceeded"}}}},
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("read_file", "r1", path="README.md")]}},
        {"match": {"tool": "read_file"}, "reply": {"text": "fits now"}},
    ]})
    before = len(harness.server.requests)
    result, _ = await harness.run("last question", session_id=sid)
    assert result.stop_reason == "done" and result.text == "fits now"
    sent = harness.server.requests[before:]
    assert [r.status for r in sent] == [400, 200, 200]
    contents = [json.dumps(r.body["messages"]) for r in sent]
    assert "question 0 " in contents[0] and "question 0 " not in contents[1]
    # The next step sends no more of the history than the server accepted, though the
    # estimate alone says it all fits: the model is not refused again at every step.
    assert "question 0 " not in contents[2]
    assert len(sent[2].body["messages"]) <= len(sent[1].body["messages"]) + 2


async def test_same_words_before_different_calls_are_progress(harness: Harness) -> None:
    # One step's calls differ from the next one's: read, list, read, then the answer.
    harness.server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"text": "Let me read the next file.",
                                                     "tool_calls": [call("read_file", "a",
                                                                         path="README.md")]}},
        {"match": {"tool": "read_file", "user": "/read/"}, "times": 1, "reply": {
            "text": "Let me read the next file.",
            "tool_calls": [call("read_file", "b", path="src/calc.py")]}},
        {"match": {"tool": "read_file"}, "times": 1, "reply": {
            "text": "Let me read the next file.",
            "tool_calls": [call("read_file", "c", path="src/main.py")]}},
        {"match": {"tool": "read_file"}, "reply": {"text": "All read."}},
    ]})
    result, _ = await harness.run("read everything")
    assert result.stop_reason == "done" and result.iterations == 4


async def test_yes_approves_in_automation_mode_but_nobody_answers_questions(
    harness: Harness
) -> None:
    asked: list[str] = []

    class PreApproved(RecordingFrontend):
        preapproved = True  # `agentls run --yes`

        async def confirm(self, request: ApprovalRequest) -> Any:
            return "allow_once"

        async def ask(self, question: str, options: list[str]) -> str | None:
            asked.append(question)
            return options[0]

    class Prompting(RecordingFrontend):
        async def confirm(self, request: ApprovalRequest) -> Any:
            asked.append(request.title)
            return "allow_once"

    harness.server.load({"steps": [
        {"match": {"tool_results": False}, "times": 2, "reply": {"tool_calls": [
            call("shell_exec", "s1", command="echo hi"),
            call("ask_user", "q1", question="Which?", options=["a", "b"])]}},
        {"match": {"tool_results": True}, "times": 2, "reply": {"text": "ok"}},
    ]})
    ask_for_commands(harness)
    sid = harness.session("automation")
    await harness.run("go", session_id=sid, frontend=PreApproved(interactive=True))
    results = tool_results(harness.server.requests[1].body)
    assert results["s1"]["ok"] and "hi" in json.dumps(results["s1"])
    assert results["q1"]["error"] == "NO_ONE_TO_ASK" and asked == []

    await harness.run("go", session_id=sid, frontend=Prompting(interactive=True))
    results = tool_results(harness.server.requests[3].body)
    assert results["s1"]["error"] == "USER_REJECTED" and asked == []  # automation never asks


async def test_cancel_during_tools_keeps_the_results_of_calls_that_ran(
    harness: Harness
) -> None:
    harness.server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("write_file", "w1", path="new.py", content="x = 1\n"),
            call("shell_exec", "s1", command="make build")]}},
    ]})
    waiting = asyncio.Event()

    class Hanging(RecordingFrontend):
        async def confirm(self, request: ApprovalRequest) -> Any:
            waiting.set()
            await asyncio.Event().wait()  # the person never answers

    ask_for_commands(harness)
    sid = harness.session()
    task = asyncio.create_task(harness.agent.run(sid, RunRequest("build"),
                                                 Hanging(interactive=True),
                                                 Workspace([harness.root]), run_id="r-2"))
    await waiting.wait()
    assert harness.agent.cancel("r-2")
    result = await task
    assert result.stop_reason == "cancelled" and not result.send_changes
    stored = {m.message.tool_call_id: json.loads(m.message.content or "{}")
              for m in harness.store.history(sid) if m.message.role == "tool"}
    assert stored["w1"]["ok"] is True  # it did run: its result is not "not run"
    assert stored["s1"]["error"] == "NOT_RUN"


async def test_an_unexpected_failure_ends_the_run_with_an_error(harness: Harness) -> None:
    harness.server.load({"steps": [
        {"match": {"user": "choose"}, "reply": {"tool_calls": [
            call("ask_user", "q1", question="Which?", options=["a", "b"])]}},
        {"match": {"user": "again"}, "reply": {"text": "fine"}},
    ]})

    class Broken(RecordingFrontend):
        async def ask(self, question: str, options: list[str]) -> str | None:
            raise RuntimeError("the front-end broke")

    sid = harness.session()
    result, front = await harness.run("choose", session_id=sid, frontend=Broken(interactive=True))
    assert result.stop_reason == "error" and "the front-end broke" in result.error_message
    assert [e.kind for e in front.events][-2:] == ["error", "done"]
    follow, _ = await harness.run("again", session_id=sid)  # the session is still valid
    assert follow.stop_reason == "done"
    results = tool_results(harness.server.requests[-1].body)
    assert results["q1"]["error"] == "NOT_RUN"


async def test_a_failed_compaction_falls_back_to_trimming(harness: Harness) -> None:
    from agentls.llm.messages import Message

    sid = harness.session()
    for i in range(70):
        harness.store.append(sid, Message.user(f"turn {i}"))
        harness.store.append(sid, Message.assistant(f"reply {i}"))
    harness.server.load({"steps": [
        {"match": {"stream": False}, "error": {"status": 500}},
        {"reply": {"text": "continuing"}},
    ]})
    result, _ = await harness.run("go on", session_id=sid)
    assert result.stop_reason == "done" and result.text == "continuing"
    assert not any(m.kind == "summary" for m in harness.store.history(sid))


async def test_the_compaction_transcript_fits_a_small_model(harness: Harness) -> None:
    from agentls.llm.messages import Message
    from tests.engine.conftest import settings_for

    harness.agent.settings = settings_for(harness.server, context_max_tokens=4_000)
    sid = harness.session()
    for i in range(70):
        harness.store.append(sid, Message.user(f"turn {i} " + "words " * 100))
        harness.store.append(sid, Message.assistant(f"reply {i} " + "words " * 100))
    harness.server.load({"steps": [
        {"match": {"stream": False}, "reply": {"text": "summary"}},
        {"reply": {"text": "continuing"}},
    ]})
    result, _ = await harness.run("go on", session_id=sid)
    assert result.stop_reason == "done"
    compaction = next(r for r in harness.server.requests if not r.body.get("stream"))
    transcript = compaction.body["messages"][-1]["content"]
    assert len(transcript) < 4_000 * 3 // 2 + 200 and compaction.body["max_tokens"] <= 1_000


async def test_only_recent_sessions_stay_in_memory(harness: Harness,
                                                   monkeypatch: Any) -> None:
    from agentls.engine.loop import agent as agent_module

    monkeypatch.setattr(agent_module, "MAX_SESSION_STATES", 2)
    harness.server.load({"steps": [{"times": "*", "reply": {"text": "hi"}}]})
    sessions = [harness.session() for _ in range(3)]
    for sid in sessions:
        await harness.run("hello", session_id=sid)
    assert list(harness.agent._sessions) == sessions[1:]  # a server would grow forever
    again, _ = await harness.run("hello again", session_id=sessions[0])
    assert again.stop_reason == "done"
    assert list(harness.agent._sessions) == [sessions[2], sessions[0]]


async def test_update_plan_is_offered_only_to_a_front_end_that_shows_plans(
        harness: Harness) -> None:
    plan = {"plan": [{"step": "Read", "status": "completed"},
                     {"step": "Fix", "status": "in_progress"}]}
    harness.server.load({"steps": [
        {"match": {"tool_results": False}, "times": 2, "reply": {"tool_calls": [
            call("update_plan", "p1", **plan)]}},
        {"match": {"tool_results": True}, "times": 2, "reply": {"text": "ok"}},
    ]})
    plain, _ = await harness.run("go")
    assert plain.stop_reason == "done"
    offered = [t["function"]["name"] for t in harness.server.requests[0].body["tools"]]
    assert "update_plan" not in offered
    assert tool_results(harness.server.requests[1].body)["p1"]["error"] == "UNKNOWN_TOOL"
    front = RecordingFrontend()
    front.shows_plan = True  # type: ignore[attr-defined]
    result, _ = await harness.run("go", frontend=front)
    assert result.stop_reason == "done"
    assert [e.steps for e in front.of("plan")] == [
        (("Read", "completed"), ("Fix", "in_progress"))]
    assert tool_results(harness.server.requests[3].body)["p1"]["ok"]
