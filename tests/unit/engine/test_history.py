"""Trimming requests to the token budget, and compacting long histories into a summary."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Sequence

import pytest

from agentls.devtools.replay.command import count_prompt_tokens
from agentls.engine.prompt.compaction import (
    apply_summary,
    compaction_request,
    compaction_split,
    needs_compaction,
    render_transcript,
)
from agentls.engine.prompt.history import (
    CUT_TOOL_RESULTS_OVER,
    SUMMARY_HEADER,
    TrimResult,
    is_summary,
    prompt_budget,
    summary_message,
    trim_for_budget,
    trim_harder,
)
from agentls.engine.prompt.tokens import TokenEstimator
from agentls.llm.messages import Message, ToolCall, ToolSpec

KEY = ("scripted", "scripted-model")
MARKER = "characters omitted ...]"

TOOLS = [
    ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {}}}),
    ToolSpec("grep", "Search files.", {"type": "object", "properties": {"pattern": {}}}),
]
SYSTEM = [
    Message.system("You are AgentLS, a coding agent. Read files before editing them."),
    Message.system("Project facts: a Python package in src/, tests in tests/."),
]

CODE_LINE = "    total = sum(item.price * item.quantity for item in order.items)  # line {n}\n"


def code(lines: int, seed: int) -> str:
    return "".join(CODE_LINE.format(n=seed * 1000 + i) for i in range(lines))


def session(length: int, seed: int = 0) -> list[Message]:
    """A realistic session of about ``length`` messages: turns of a request, tool calls (some
    parallel) with big results, and answers; it never ends between a call and its results."""
    rnd = random.Random(seed)
    messages: list[Message] = []
    turn = 0
    while len(messages) < length:
        turn += 1
        messages.append(Message.user(f"Turn {turn}: please look at module_{turn}.py and fix it."))
        for step in range(rnd.randint(0, 3)):
            calls = [
                ToolCall(f"call_{turn}_{step}_{k}", "read_file",
                         json.dumps({"path": f"module_{turn}_{k}.py"}))
                for k in range(rnd.randint(1, 3))
            ]
            messages.append(Message.assistant(rnd.choice([None, "Reading."]), calls))
            for call in calls:
                size = rnd.choice([5, 20, 60, 110])
                messages.append(Message.tool(call.id, code(size, turn), name="read_file"))
        messages.append(Message.assistant(f"Done with turn {turn}: fixed module_{turn}.py."))
    return messages[: complete_prefix(messages, length)]


def complete_prefix(messages: Sequence[Message], length: int) -> int:
    """The longest length <= ``length`` that does not end between a call and its results."""
    while length < len(messages) and (
        messages[length].role == "tool" or messages[length - 1].tool_calls
    ):
        length -= 1
    return length


def calibrated(ratio_from: Sequence[Message] = ()) -> TokenEstimator:
    """An estimator calibrated once against the scripted server's documented count."""
    estimator = TokenEstimator()
    sample = list(ratio_from) or [*SYSTEM, *session(30, seed=99)]
    wire = [m.to_openai() for m in sample]
    tools = [t.to_openai() for t in TOOLS]
    estimator.observe(KEY, estimator.raw_estimate(sample, TOOLS),
                      count_prompt_tokens(wire, tools))
    return estimator


def server_count(messages: Sequence[Message]) -> int:
    return count_prompt_tokens([m.to_openai() for m in messages], [t.to_openai() for t in TOOLS])


def assert_well_formed(messages: Sequence[Message]) -> None:
    """Every tool call is answered right after it, and every tool result answers a call."""
    conversation = [m for m in messages if m.role != "system"]
    assert conversation, "nothing left to send"
    assert conversation[0].role != "tool", "history starts with a tool result"
    pending: set[str] = set()
    for message in conversation:
        if message.role == "tool":
            assert message.tool_call_id in pending, f"orphan result {message.tool_call_id}"
            pending.discard(message.tool_call_id)
            continue
        assert not pending, f"calls without results: {sorted(pending)}"
        pending = {call.id for call in message.tool_calls}
    assert not pending, f"calls without results: {sorted(pending)}"


def identity(message: Message) -> str:
    """What tells messages of these sessions apart, whether or not they were cut."""
    return message.tool_call_id or message.content or ""


def trim(history: Sequence[Message], new: Sequence[Message], budget: int,
         estimator: TokenEstimator) -> TrimResult:
    return trim_for_budget(SYSTEM, history, new, budget, estimator, KEY, tools=TOOLS)


# --- trimming ---------------------------------------------------------------------------------


def test_a_300_message_session_stays_under_budget_with_tool_pairs_intact() -> None:
    history = session(300)
    stored = list(history)
    new = [Message.user("Now run the tests and tell me what fails.")]
    context = 32_768
    budget = prompt_budget(context)
    estimator = calibrated()
    assert server_count([*SYSTEM, *history, *new]) > 3 * context  # far over, to begin with

    result = trim(history, new, budget, estimator)

    assert result.estimated_tokens <= budget
    assert server_count(result.messages) <= context  # the server agrees it fits
    assert result.messages[: len(SYSTEM)] == SYSTEM
    assert result.messages[-4:] == [*history[-3:], *new]  # the last 4 messages, whole
    assert result.dropped_count > 0 and result.cut_tool_results > 0
    assert_well_formed(result.messages)
    assert history == stored  # the store's list is never changed
    sent = [identity(m) for m in result.messages[len(SYSTEM):]]
    assert sent == [identity(m) for m in [*history[result.dropped_count:], *new]]


def test_every_length_of_a_growing_session_is_trimmed_to_a_valid_request() -> None:
    estimator = calibrated()
    budget = prompt_budget(16_384)
    history = session(300, seed=3)
    for length in sorted({complete_prefix(history, n) for n in range(5, 300, 3)}):
        result = trim(history[:length], [], budget, estimator)
        assert_well_formed(result.messages)
        assert result.messages[-4:] == history[max(0, length - 4) : length]
        tail = history[group_start(history, max(0, length - 4)) : length]
        # Over budget only when nothing but the protected tail is left to send.
        assert result.estimated_tokens <= budget or result.messages[len(SYSTEM):] == tail


def test_old_tool_results_are_cut_before_any_message_is_dropped() -> None:
    history = session(60, seed=1)
    new = [Message.user("And the tests?")]
    estimator = calibrated()
    full = estimator.estimate_messages(KEY, [*SYSTEM, *history, *new], TOOLS)
    big = [m for m in history[:-3] if m.role == "tool" and len(m.content or "") > 2_000]
    assert len(big) >= 5

    cutting_suffices = trim(history, new, int(full * 0.6), estimator)
    assert cutting_suffices.dropped_count == 0
    assert cutting_suffices.cut_tool_results == len(big)
    assert len(cutting_suffices.messages) == len(SYSTEM) + len(history) + 1
    for before, after in zip(history, cutting_suffices.messages[len(SYSTEM):], strict=False):
        if before in big:
            assert MARKER in (after.content or "") and after.tool_call_id == before.tool_call_id
            content = before.content or ""
            assert (after.content or "").startswith(content[:400])
            assert (after.content or "").endswith(content[-400:])
        else:
            assert after is before

    must_drop = trim(history, new, int(full * 0.1), estimator)
    assert must_drop.dropped_count > 0
    kept_old = must_drop.messages[len(SYSTEM) : -4]
    assert all(
        MARKER in (m.content or "") for m in kept_old
        if m.role == "tool" and len(m.content or "") > CUT_TOOL_RESULTS_OVER
    ) and any(m.role == "tool" for m in kept_old)


def test_a_prompt_under_budget_is_sent_unchanged() -> None:
    history = session(20, seed=2)
    new = [Message.user("Thanks!")]
    result = trim(history, new, 1_000_000, calibrated())
    assert result.messages == [*SYSTEM, *history, *new]
    assert all(a is b for a, b in zip(result.messages, [*SYSTEM, *history, *new], strict=True))
    assert (result.dropped_count, result.cut_tool_results) == (0, 0)


def test_the_last_messages_never_split_a_call_from_its_results() -> None:
    calls = [ToolCall(f"c{i}", "grep", json.dumps({"pattern": f"p{i}"})) for i in range(5)]
    history = [
        *session(40, seed=4),
        Message.user("search everything"),
        Message.assistant(None, calls),
        *[Message.tool(c.id, code(200, i)) for i, c in enumerate(calls)],
    ]
    result = trim(history, [], 500, calibrated())
    # The request, the call and its 5 results: the results cut to head and tail, never split.
    sent = result.messages[len(SYSTEM):]
    assert sent[:2] == history[-7:-5]
    assert [m.tool_call_id for m in sent[2:]] == [c.id for c in calls]
    for before, after in zip(history[-5:], sent[2:], strict=True):
        assert (after.content or "").startswith((before.content or "")[:150])
    assert_well_formed(result.messages)


def test_a_summary_stays_at_the_front_and_leading_orphan_results_go() -> None:
    summary = summary_message("- The person wants type hints everywhere.")
    orphan = Message.tool("lost_call", "output of a call that is not in the history")
    history = [summary, orphan, *session(120, seed=5)]
    estimator = calibrated()

    roomy = trim(history, [], 10_000_000, estimator)
    assert roomy.messages[len(SYSTEM)] == summary
    assert orphan not in roomy.messages and roomy.dropped_count == 1

    tight = trim(history, [], prompt_budget(8_192), estimator)
    assert tight.messages[len(SYSTEM)] == summary
    assert tight.dropped_count > 1
    assert_well_formed(tight.messages)


def test_the_first_kept_message_stays_put_while_a_run_grows() -> None:
    """Dropping is rounded up to a step of the budget, so providers' prefix caches hit."""
    estimator = calibrated()
    history = session(260, seed=6)
    budget = prompt_budget(32_768)
    result: TrimResult | None = None
    starts: list[int] = []
    for n in sorted({complete_prefix(history, n) for n in range(150, 260)}):
        result = trim_for_budget(
            SYSTEM, history[:n], [], budget, estimator, KEY, tools=TOOLS, previous=result
        )
        assert result.estimated_tokens <= budget
        assert_well_formed(result.messages)
        starts.append(result.dropped_count)
    assert starts[-1] > 0 and starts == sorted(starts)
    changes = sum(1 for a, b in itertools.pairwise(starts) if a != b)
    assert changes <= len(starts) // 4, starts


def test_trim_harder_halves_the_droppable_history_until_nothing_is_left() -> None:
    history = session(200, seed=7)
    new = [Message.user("Summarise the failures.")]
    estimator = calibrated()
    first = trim(history, new, prompt_budget(128_000), estimator)
    droppable = len(history) - 4 - first.dropped_count  # the last 4 are never dropped

    harder = trim_harder(SYSTEM, history, new, first, estimator, KEY, tools=TOOLS)
    newly = harder.dropped_count - first.dropped_count
    assert droppable / 2 <= newly <= droppable / 2 + 4  # half, rounded up to a whole group
    assert harder.estimated_tokens < first.estimated_tokens
    assert_well_formed(harder.messages)

    result = harder
    for _ in range(12):
        previous, result = result, trim_harder(
            SYSTEM, history, new, result, estimator, KEY, tools=TOOLS
        )
        assert_well_formed(result.messages)
    assert result.estimated_tokens >= previous.estimated_tokens  # no smaller: caller fails
    # Last, the final messages were shrunk too, but stay: the call's results and the request.
    assert [m.tool_call_id for m in result.messages[-4:]] == [
        m.tool_call_id for m in [*history[-3:], *new]]
    assert result.messages[-1] == new[0]


# --- compaction -------------------------------------------------------------------------------


def test_compaction_boundaries_never_split_a_call_from_its_results() -> None:
    history = session(150, seed=8)
    for keep_recent in range(1, 60):
        split = compaction_split(history, keep_recent=keep_recent)
        assert split > 0
        assert history[split].role != "tool"
        assert len(history) - split >= keep_recent
        compacted = apply_summary(history, "summary", split)
        assert is_summary(compacted[0]) and compacted[1:] == history[split:]
        assert_well_formed(compacted)


def test_compaction_prefers_to_split_at_a_request_from_the_person() -> None:
    history = session(150, seed=9)
    split = compaction_split(history, keep_recent=12)
    assert history[split].role == "user"


def test_apply_summary_moves_a_split_inside_a_tool_group_back_to_the_call() -> None:
    history = session(80, seed=10)
    inside = next(i for i, m in enumerate(history) if m.role == "tool" and i > 20)
    compacted = apply_summary(history, "what happened", inside)
    assert compacted[1].tool_calls and compacted[1:] == history[group_start(history, inside):]
    assert_well_formed(compacted)


def group_start(history: Sequence[Message], index: int) -> int:
    while history[index].role == "tool":
        index -= 1
    return index


def test_a_second_compaction_replaces_the_first_summary() -> None:
    history = session(100, seed=11)
    once = apply_summary(history, "first summary", compaction_split(history))
    twice = apply_summary(once, "second summary", compaction_split(once))
    assert sum(1 for m in twice if is_summary(m)) == 1
    assert twice[0].content == f"{SUMMARY_HEADER}\n\nsecond summary"
    assert_well_formed(twice)


def test_needs_compaction_by_message_count_and_by_budget() -> None:
    long = session(130, seed=12)
    short = session(60, seed=12)
    budget = 10_000
    fits = TrimResult([], 0, 0, estimated_tokens=5_000)
    tight = TrimResult([], 0, 3, estimated_tokens=9_500)
    dropped = TrimResult([], 10, 3, estimated_tokens=7_000)

    assert needs_compaction(long, max_messages=120)
    assert not needs_compaction(short, max_messages=120)
    assert not needs_compaction(short, trimmed=fits, budget_tokens=budget)
    assert needs_compaction(short, trimmed=tight, budget_tokens=budget)
    assert needs_compaction(short, trimmed=dropped, budget_tokens=budget)
    # A summary does not count, and there must be something older than the recent part.
    assert not needs_compaction([summary_message("s"), *short[:8]], max_messages=4)


def test_the_compaction_request_asks_for_what_the_agent_needs_and_cuts_long_output() -> None:
    history = [summary_message("- Uses pytest; never touch vendor/."), *session(60, seed=13)]
    split = compaction_split(history)
    request = compaction_request(history[:split], max_transcript_chars=50_000)

    assert request.tools == [] and request.max_tokens
    instructions = (request.messages[0].content or "").lower()
    for needed in ("decision", "file", "open", "preference", "earlier summary", "command"):
        assert needed in instructions
    transcript = request.messages[1].content or ""
    assert len(transcript) < 51_000
    assert "## Earlier summary\n- Uses pytest; never touch vendor/." in transcript
    assert "-> calls read_file {\"path\": \"module_1_0.py\"}" in transcript
    assert "## Result of read_file" in transcript and MARKER in transcript


def test_the_transcript_names_the_tool_of_each_result() -> None:
    call = ToolCall("c1", "grep", '{"pattern": "TODO"}')
    text = render_transcript([
        Message.user("find the todos"),
        Message.assistant("Searching.", [call]),
        Message.tool("c1", "a.py:3: # TODO"),
    ])
    assert text == (
        "## Person\nfind the todos\n\n## Agent\nSearching.\n-> calls grep "
        '{"pattern": "TODO"}\n\n## Result of grep\na.py:3: # TODO'
    )


@pytest.mark.parametrize("upto", [0, 1])
def test_apply_summary_at_the_very_front_keeps_one_summary(upto: int) -> None:
    history = [summary_message("old"), *session(10, seed=14)]
    compacted = apply_summary(history, "new", upto)
    assert [m for m in compacted if is_summary(m)] == [summary_message("new")]
    assert compacted[1:] == history[1:]
