"""What of a long conversation goes into the next request: trimming and compaction.

Only the request is shortened; the session store keeps every message. All functions here are
pure (memoisation aside) and never separate an assistant message that calls tools from the
results of those calls: providers reject a tool result without its call, and a call without
its results.

Trimming (:func:`trim_for_budget`), when the prompt is over budget:

1. cut old tool results (longer than :data:`CUT_TOOL_RESULTS_OVER` characters, outside the
   last :data:`KEEP_LAST` messages) to their head and tail, all at once;
2. then drop the oldest groups (a message with the tool results that answer it) until the
   prompt fits. The dropped amount is rounded up to a step of the budget, and never less than
   the previous iteration dropped (unless that leaves under a quarter of the budget used), so
   the first kept message stays the same over many iterations and providers' prefix caches
   keep hitting.

Always kept: the system levels, a summary message at the front of the history, the new
messages, and the last :data:`KEEP_LAST` messages. A history never starts with a tool result.

Compaction replaces the older part of a long history by a summary the model writes
(:func:`compaction_split`, :func:`compaction_request`, :func:`apply_summary`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from agentls.engine.tokens import CalibrationKey, TokenEstimator
from agentls.llm.backend import BackendError
from agentls.llm.messages import ChatRequest, Message, ToolSpec
from agentls.tools.output import truncate_middle

PROMPT_BUDGET_FRACTION = 0.8  # of the context window; the rest is for the answer
KEEP_LAST = 4
CUT_TOOL_RESULTS_OVER = 2_000  # characters; shorter results are kept whole
CUT_TOOL_RESULTS_TO = 1_000  # characters of head and tail kept of a cut result
DROP_STEP_FRACTION = 0.1  # dropped tokens are rounded up to this share of the budget
KEEP_AFTER_PREVIOUS_FRACTION = 0.25  # of the budget: repeating a drop never keeps less

DEFAULT_MAX_MESSAGES = 120
COMPACT_AT_FRACTION = 0.9  # of the budget, after trimming
KEEP_RECENT = 12  # messages compaction leaves as they are
SUMMARY_MAX_TOKENS = 2_000
TRANSCRIPT_CHARS = 120_000  # of the older part sent to be summarised
TRANSCRIPT_TOOL_RESULT_CHARS = 1_500
TRANSCRIPT_MESSAGE_CHARS = 6_000
TRANSCRIPT_ARGUMENT_CHARS = 400

SUMMARY_MARKER = "[Summary of the earlier conversation"
SUMMARY_HEADER = (
    f"{SUMMARY_MARKER}: the older messages of this session were compacted into it. "
    "It is context, not a new request.]"
)


def prompt_budget(context_max_tokens: int, fraction: float = PROMPT_BUDGET_FRACTION) -> int:
    """The tokens a prompt may use in a model with this context window."""
    return int(context_max_tokens * fraction)


@dataclass(frozen=True, slots=True)
class TrimResult:
    """The messages to send, and what was left out of them.

    ``dropped_count`` counts history messages not sent; ``cut_tool_results`` the tool results
    sent cut to head and tail; ``estimated_tokens`` is the calibrated estimate of the prompt,
    tool schemas included (it may exceed the budget when only protected messages remain).
    """

    messages: list[Message]
    dropped_count: int
    cut_tool_results: int
    estimated_tokens: int


def check_fits(trimmed: TrimResult, context_max_tokens: int, model: str) -> None:
    """Refuse, before sending, a request that is over the model's whole context even after
    trimming (a 5 MB prompt, a huge attachment): ``context_too_long`` with the numbers."""
    if trimmed.estimated_tokens > context_max_tokens:
        raise BackendError(
            "context_too_long",
            f"the request is about {trimmed.estimated_tokens:,} tokens (estimated), over the "
            f"context of {context_max_tokens:,} tokens of model {model!r}; nothing was sent",
            retryable=False,
            hint="shorten the prompt or attach less (or raise context_max_tokens if the "
                 "model has a larger context)")


# --- trimming ---------------------------------------------------------------------------------


def trim_for_budget(
    system: Sequence[Message],
    history: Sequence[Message],
    new: Sequence[Message],
    budget_tokens: int,
    estimator: TokenEstimator,
    key: CalibrationKey,
    *,
    tools: Sequence[ToolSpec] = (),
    keep_last: int = KEEP_LAST,
    previous: TrimResult | None = None,
) -> TrimResult:
    """``system + history + new`` shortened so the prompt fits in ``budget_tokens``.

    ``budget_tokens`` is what the prompt may use (see :func:`prompt_budget`); ``system`` holds
    the prompt levels before the history; ``new`` the messages that must be sent whole (the
    turn's request and what the run added since, unless the caller keeps those in
    ``history``); ``tools`` the schemas sent with the request, which count too.

    ``previous`` is the last result for the same history before it grew (the previous
    iteration of a run): when trimming is needed, as much is dropped again (unless the prompt
    would then use under a quarter of the budget), so the kept history starts at the same
    message from one request to the next. Pass ``None`` after the history was compacted.
    """
    plan = _Plan(system, history, new, estimator, key, tools, keep_last)
    limit = budget_tokens / plan.ratio
    if plan.total <= limit:
        return plan.result()
    plan.cut_old_tool_results()
    if previous is not None:
        plan.drop_to(previous.dropped_count, keep_tokens=limit * KEEP_AFTER_PREVIOUS_FRACTION)
    if plan.total <= limit:
        return plan.result()
    step = max(1.0, limit * DROP_STEP_FRACTION)
    plan.drop_oldest(math.ceil((plan.total - limit) / step) * step)
    return plan.result()


def trim_harder(
    system: Sequence[Message],
    history: Sequence[Message],
    new: Sequence[Message],
    previous: TrimResult,
    estimator: TokenEstimator,
    key: CalibrationKey,
    *,
    tools: Sequence[ToolSpec] = (),
    keep_last: int = KEEP_LAST,
) -> TrimResult:
    """After the server refused ``previous`` as too long: cut every old tool result and drop
    the older half of the history ``previous`` still sent.

    When its ``dropped_count`` and ``cut_tool_results`` equal ``previous``'s, nothing is left
    to take out: the protected messages alone are too long for the model.
    """
    plan = _Plan(system, history, new, estimator, key, tools, keep_last)
    plan.cut_old_tool_results()
    plan.drop_to(previous.dropped_count)
    plan.drop_half()
    return plan.result()


_cut_cache: dict[tuple[Message, int], Message] = {}
_CUT_CACHE_LIMIT = 4_096


def cut_tool_result(message: Message, limit: int = CUT_TOOL_RESULTS_TO) -> Message:
    """``message`` with its content cut to head and tail (``[... N characters omitted ...]``)."""
    cached = _cut_cache.get((message, limit))
    if cached is not None:
        return cached
    cut = Message(
        message.role,
        truncate_middle(message.content or "", limit),
        message.tool_calls,
        message.tool_call_id,
        message.name,
    )
    if len(_cut_cache) >= _CUT_CACHE_LIMIT:
        for stale in list(_cut_cache)[: _CUT_CACHE_LIMIT // 2]:
            del _cut_cache[stale]
    _cut_cache[(message, limit)] = cut
    return cut


class _Plan:
    """One trimming decision over ``history + new``, counted in raw (uncalibrated) tokens.

    Index ranges of ``conversation``: ``[0, lead)`` a kept summary; ``[lead, first)`` tool
    results with no call before them, always dropped; ``[first, drop_end)`` droppable groups;
    ``[recent, end)`` the protected tail (``drop_end <= recent``); old tool results in
    ``[first, recent)`` may be cut.
    """

    def __init__(
        self,
        system: Sequence[Message],
        history: Sequence[Message],
        new: Sequence[Message],
        estimator: TokenEstimator,
        key: CalibrationKey,
        tools: Sequence[ToolSpec],
        keep_last: int,
    ) -> None:
        self.system = system
        self.estimator = estimator
        self.key = key
        self.ratio = estimator.ratio(key)
        conversation = [*history, *new]
        self.conversation = conversation
        self.lead = 1 if history and is_summary(history[0]) else 0
        first = self.lead
        while first < len(history) and conversation[first].role == "tool":
            first += 1
        self.first = first
        self.recent = _group_start(conversation, max(first, len(conversation) - keep_last), first)
        self.drop_end = _group_start(conversation, min(self.recent, len(history)), first)
        sizes = [estimator.message_tokens(m) for m in conversation]
        self.sizes = sizes
        self.total = (
            estimator.raw_estimate(system, tools)
            + sum(sizes[: self.lead])
            + sum(sizes[first:])
        )
        self.start = first  # first message sent after the summary
        self.cut_at: list[int] = []

    def cut_old_tool_results(self) -> None:
        conversation, sizes = self.conversation, self.sizes
        for i in range(self.start, self.recent):
            message = conversation[i]
            if message.role == "tool" and len(message.content or "") > CUT_TOOL_RESULTS_OVER:
                shorter = cut_tool_result(message)
                conversation[i] = shorter
                size = self.estimator.message_tokens(shorter)
                self.total += size - sizes[i]
                sizes[i] = size
                self.cut_at.append(i)

    def _group_end(self) -> int:
        end = self.start + 1
        while end < self.drop_end and self.conversation[end].role == "tool":
            end += 1
        return end

    def _drop_group(self) -> None:
        end = self._group_end()
        self.total -= sum(self.sizes[self.start : end])
        self.start = end

    def drop_oldest(self, raw_tokens: float) -> None:
        """Drop whole groups from the front until at least ``raw_tokens`` are gone."""
        goal = self.total - raw_tokens
        while self.start < self.drop_end and self.total > goal:
            self._drop_group()

    def drop_to(self, dropped_count: int, keep_tokens: float = 0.0) -> None:
        """Drop as many messages as an earlier decision did (rounded up to a whole group), but
        stop before the prompt would fall under ``keep_tokens``."""
        while self.start < self.drop_end and self.start - self.lead < dropped_count:
            end = self._group_end()
            if self.total - sum(self.sizes[self.start : end]) < keep_tokens:
                return
            self._drop_group()

    def drop_half(self) -> None:
        goal = self.start + math.ceil((self.drop_end - self.start) / 2)
        while self.start < self.drop_end and self.start < goal:
            self._drop_group()

    def result(self) -> TrimResult:
        conversation = self.conversation
        return TrimResult(
            messages=[*self.system, *conversation[: self.lead], *conversation[self.start :]],
            dropped_count=self.start - self.lead,
            cut_tool_results=sum(1 for i in self.cut_at if i >= self.start),
            estimated_tokens=self.estimator.scale(self.key, self.total),
        )


def _group_start(conversation: Sequence[Message], index: int, floor: int) -> int:
    """``index``, moved back onto the call whose results it would otherwise split."""
    while floor < index < len(conversation) and conversation[index].role == "tool":
        index -= 1
    return index


# --- compaction -------------------------------------------------------------------------------

SUMMARY_INSTRUCTIONS = """\
You compact the history of a coding session between a person and an AI coding agent that \
works in the person's workspace with tools (reading and searching files, editing them, running \
commands). The older part of the session is given as a transcript. It will be replaced by your \
summary: from now on the agent sees only your summary and the most recent messages, so write \
down everything it needs to carry on without asking again.

Keep:
- The person's goals and requests, in their own terms, and for each whether it is done, in \
progress or still open.
- Decisions taken and why, and approaches that were tried and rejected.
- Files and symbols involved, with exact paths and names: what was read, created, edited, \
deleted or renamed, and whether the person applied or rejected the edits.
- Commands run and their outcome (tests passing or failing, error messages that still matter).
- The person's preferences and constraints (style, libraries, what not to touch, how they \
want answers).
- Facts learned about the project that would be costly to find again.
- Open questions, and the next step the agent was about to take.

Rules:
- If the transcript starts with an earlier summary, fold it into yours.
- Keep exact file paths, identifiers, numbers and error texts; never invent anything.
- Drop greetings, tool output that no longer matters, and whatever was superseded.
- Write in the language the person writes in, as short Markdown sections with bullet \
points; quote code only when a line or two is essential.
- Output only the summary, at most about {words} words. Do not address the person."""


def summary_message(text: str) -> Message:
    """The message that stands for the compacted part of a history in future requests.

    A user message rather than a system one: it sits after the prompt levels, and many chat
    templates refuse a system message there. Its header says it is not a new request.
    """
    return Message.user(f"{SUMMARY_HEADER}\n\n{text.strip()}")


def is_summary(message: Message) -> bool:
    return message.role == "user" and (message.content or "").startswith(SUMMARY_MARKER)


def needs_compaction(
    history: Sequence[Message],
    *,
    max_messages: int = DEFAULT_MAX_MESSAGES,
    trimmed: TrimResult | None = None,
    budget_tokens: int | None = None,
    keep_recent: int = KEEP_RECENT,
) -> bool:
    """Whether to summarise the older part of ``history`` (as requests see it) now.

    Yes when it holds more than ``max_messages`` messages besides a summary, or when the last
    trim (``trimmed``, against ``budget_tokens``) had to drop messages or still uses more than
    :data:`COMPACT_AT_FRACTION` of the budget; never when there is nothing older than the
    ``keep_recent`` last messages to summarise.
    """
    if compaction_split(history, keep_recent=keep_recent) == 0:
        return False
    lead = 1 if history and is_summary(history[0]) else 0
    if len(history) - lead > max_messages:
        return True
    if trimmed is None:
        return False
    if trimmed.dropped_count > 0:
        return True
    return budget_tokens is not None and (
        trimmed.estimated_tokens > COMPACT_AT_FRACTION * budget_tokens
    )


def compaction_split(history: Sequence[Message], *, keep_recent: int = KEEP_RECENT) -> int:
    """Where to split ``history`` into the part to summarise and the part kept as it is.

    The last ``keep_recent`` messages are always kept. The split moves back to a message from
    the person when one lies in the newer half of the older part, else to the start of a group
    (never between a call and its results). 0 means there is nothing to summarise.
    """
    lead = 1 if history and is_summary(history[0]) else 0
    candidate = len(history) - keep_recent
    if candidate <= lead:
        return 0
    for i in range(candidate, lead + (candidate - lead) // 2, -1):
        if history[i].role == "user":
            return i
    split = _group_start(history, candidate, lead)
    return split if split > lead else 0


def compaction_request(
    older: Sequence[Message],
    *,
    max_transcript_chars: int = TRANSCRIPT_CHARS,
    max_summary_tokens: int = SUMMARY_MAX_TOKENS,
) -> ChatRequest:
    """The request asking the model to summarise ``older`` (no tools, so it can only write).

    The part is sent as a transcript inside one message rather than replayed as a
    conversation, so the model summarises it instead of carrying it on. Long tool output is
    cut, and the whole transcript is held to ``max_transcript_chars``: pass about three
    characters per token of half the model's context window.
    """
    words = max(100, int(max_summary_tokens * 0.6))
    transcript = truncate_middle(render_transcript(older), max_transcript_chars)
    return ChatRequest(
        messages=[
            Message.system(SUMMARY_INSTRUCTIONS.format(words=words)),
            Message.user(
                "Summarise this older part of the session.\n\n<transcript>\n"
                f"{transcript}\n</transcript>"
            ),
        ],
        max_tokens=max_summary_tokens,
    )


def render_transcript(messages: Sequence[Message]) -> str:
    """A plain-text transcript of ``messages`` for the summariser, long texts cut."""
    tool_names = {
        call.id: call.name for message in messages for call in message.tool_calls
    }
    parts: list[str] = []
    for message in messages:
        content = message.content or ""
        if is_summary(message):
            body = content.removeprefix(SUMMARY_HEADER).strip()
            parts.append(f"## Earlier summary\n{body}")
        elif message.role == "user":
            parts.append(f"## Person\n{truncate_middle(content, TRANSCRIPT_MESSAGE_CHARS)}")
        elif message.role == "system":
            parts.append(f"## Note\n{truncate_middle(content, TRANSCRIPT_MESSAGE_CHARS)}")
        elif message.role == "assistant":
            lines = [truncate_middle(content, TRANSCRIPT_MESSAGE_CHARS)] if content else []
            lines += [
                f"-> calls {call.name} {truncate_middle(call.arguments, TRANSCRIPT_ARGUMENT_CHARS)}"
                for call in message.tool_calls
            ]
            parts.append("## Agent\n" + "\n".join(lines))
        else:
            name = message.name or tool_names.get(message.tool_call_id or "", "a tool")
            cut = truncate_middle(content, TRANSCRIPT_TOOL_RESULT_CHARS)
            parts.append(f"## Result of {name}\n{cut}")
    return "\n\n".join(parts)


def apply_summary(
    history: Sequence[Message], summary_text: str, upto_index: int
) -> list[Message]:
    """``history`` as future requests see it once ``history[:upto_index]`` is summarised.

    A split that would leave tool results without their call moves back onto the call (the
    call is then both summarised and kept, which is harmless); an earlier summary at the
    front is replaced, never kept twice.
    """
    lead = 1 if history and is_summary(history[0]) else 0
    upto = _group_start(history, max(lead, min(upto_index, len(history))), lead)
    while upto < len(history) and history[upto].role == "tool":  # results with no call at all
        upto += 1
    return [summary_message(summary_text), *history[upto:]]
