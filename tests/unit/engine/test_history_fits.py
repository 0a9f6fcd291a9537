"""Every session stays continuable: over random histories (sizes, many large tool calls,
interrupted turns, follow-ups and runs still going), the trimmed request fits the budget
(the model's context minus room for the answer), the newest message from the person is
sent whole, and the last call's outcomes are sent (cut to head and tail at most)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.engine.test_history import KEY, SYSTEM, TOOLS, assert_well_formed, calibrated

from agentls.engine.prompt.history import prompt_budget, trim_for_budget, trim_harder
from agentls.engine.prompt.tool_call_shrink import ARGUMENT_HEAD_CHARS, shrink_arguments
from agentls.llm.messages import Message, ToolCall

INTERRUPTED = '{"ok": false, "error": "INTERRUPTED", "message": "the run stopped before ' \
              'this call finished"}'
TEXT = "def handler(event):\n    return process(event)  # a line of generated code\n"


def text(size: int) -> str:
    return (TEXT * (size // len(TEXT) + 1))[:size]


@st.composite
def steps(draw: st.DrawFn, turn: int, step: int) -> list[Message]:
    """One model step: a message with 1-40 calls (writes with large contents, reads), then
    their results (some large, some interrupted). Call ids are unique in the session, as a
    provider's are (turn, step and call number; a random suffix alone shrinks to 0)."""
    count = draw(st.integers(1, 40))
    calls, results = [], []
    interrupted_from = draw(st.integers(0, count))  # a kill -9 leaves the rest unanswered
    for k in range(count):
        call_id = f"c{turn}_{step}_{k}"
        if draw(st.booleans()):
            size = draw(st.sampled_from([10, 500, 4_000, 16_000, 40_000]))
            arguments = {"path": f"src/gen_{turn}_{k}.py", "content": text(size)}
            calls.append(ToolCall(call_id, "write_file", json.dumps(arguments)))
        else:
            calls.append(ToolCall(call_id, "read_file", json.dumps({"path": f"m{k}.py"})))
        size = draw(st.sampled_from([20, 300, 3_000, 30_000]))
        body = INTERRUPTED if k >= interrupted_from else \
            json.dumps({"ok": True, "k": k}) + text(size)
        results.append(Message.tool(call_id, body, name=calls[-1].name))
    content = draw(st.sampled_from([None, "Writing the files.", text(3_000)]))
    return [Message.assistant(content, tuple(calls)), *results]


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    for turn in range(draw(st.integers(1, 6))):
        messages.append(Message.user(f"turn {turn}: " + text(draw(st.sampled_from(
            [10, 200, 2_000, 12_000])))))
        for step in range(draw(st.integers(0, 3))):
            messages += draw(steps(turn, step))
        if draw(st.booleans()):
            messages.append(Message.assistant("Done. " + text(draw(st.sampled_from(
                [10, 1_000, 8_000])))))
    if draw(st.booleans()):  # a follow-up after everything, as `agentls run --session S`
        messages.append(Message.user("And now the tests, please."))
    return messages


def newest_request(history: list[Message]) -> Message:
    return next(m for m in reversed(history) if m.role == "user")


def last_calls(history: list[Message]) -> tuple[Message, list[Message]] | None:
    """The last call with its results, when it belongs to the newest request or to the turn
    a follow-up directly follows (no other message from the person after it): a call from an
    older turn is history, dropped oldest first like any other group."""
    requests_after = 0
    for i in range(len(history) - 1, -1, -1):
        requests_after += history[i].role == "user"
        if requests_after > 1:
            return None
        if history[i].tool_calls:
            ids = {c.id for c in history[i].tool_calls}
            return history[i], [m for m in history[i + 1:] if m.tool_call_id in ids]
    return None


ESTIMATOR = calibrated()


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(histories(), st.sampled_from([16_384, 32_768, 128_000]))
def test_a_follow_up_always_fits_with_the_request_and_the_last_outcomes(
        history: list[Message], context: int) -> None:
    stored = list(history)
    budget = prompt_budget(context)
    result = trim_for_budget(SYSTEM, history, [], budget, ESTIMATOR, KEY, tools=TOOLS)

    assert result.estimated_tokens <= budget  # room left for the answer
    assert history == stored  # the store's messages are never changed
    sent = result.messages
    assert_well_formed(sent)
    assert newest_request(history) in sent  # the person's newest message, whole
    last = last_calls(history)
    if last is not None:
        call_message, outcomes = last
        sent_calls = {c.id: c for m in sent for c in m.tool_calls}
        for call in call_message.tool_calls:  # the call stays, with its path
            assert call.id in sent_calls
            assert json.loads(sent_calls[call.id].arguments)["path"] == \
                json.loads(call.arguments)["path"]
        by_id = {m.tool_call_id: m for m in sent if m.role == "tool"}
        for outcome in outcomes:  # each outcome stays: the head of every result
            assert (by_id[outcome.tool_call_id].content or "").startswith(
                (outcome.content or "")[:150])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(histories())
def test_refused_as_too_long_the_harder_trims_end_and_keep_the_request(
        history: list[Message]) -> None:
    """When a server refuses a request, trim_harder goes on taking out until nothing is
    left but the request and the last call with its outcomes; then the caller stops."""
    budget = prompt_budget(16_384)
    result = trim_for_budget(SYSTEM, history, [], budget, ESTIMATOR, KEY, tools=TOOLS)
    for _ in range(len(history) + 4):
        previous, result = result, trim_harder(SYSTEM, history, [], result, ESTIMATOR, KEY,
                                               tools=TOOLS)
        assert_well_formed(result.messages)
        assert newest_request(history) in result.messages
        if result.estimated_tokens >= previous.estimated_tokens:
            break  # no smaller: the caller gives up with the server's message
    else:
        raise AssertionError("trim_harder never stopped making progress")


def test_shrunk_arguments_keep_the_path_and_say_what_was_omitted() -> None:
    content = text(16_000)
    shrunk = json.loads(shrink_arguments(json.dumps({"path": "src/a.py", "content": content})))
    assert shrunk["path"] == "src/a.py"
    assert shrunk["content"].startswith(content[:ARGUMENT_HEAD_CHARS])
    assert f"{16_000 - ARGUMENT_HEAD_CHARS:,} characters omitted" in shrunk["content"]
    assert "keep the session within the model's context" in shrunk["content"]
    small = json.dumps({"path": "src/a.py", "content": "x = 1\n"})
    assert shrink_arguments(small) == small
    assert json.loads(shrink_arguments("{not json" + "x" * 500))["omitted"]
