"""What of a long conversation goes into the next request: trimming, and the summary message.

Only the request is shortened; the session store keeps every message. All functions here are
pure (memoisation aside) and never separate an assistant message that calls tools from the
results of those calls: providers reject a tool result without its call, and a call without
its results.

Trimming (:func:`trim_for_budget`), when the prompt is over budget:

1. shrink old tool calls and results (outside the last :data:`KEEP_LAST` messages), all at
   once: results longer than :data:`CUT_TOOL_RESULTS_OVER` characters to their head and tail,
   calls' long string arguments (a written file's content, an edit's texts) to a head and a
   note saying so (``tool_call_shrink.py``); the call, its path and its outcome stay;
2. then drop the oldest groups (a message with the tool results that answer it) until the
   prompt fits. The dropped amount is rounded up to a step of the budget, and never less than
   the previous iteration dropped (unless that leaves under a quarter of the budget used), so
   the first kept message stays the same over many iterations and providers' prefix caches
   keep hitting;
3. then shrink the last messages' calls and results the same way (results to head and tail,
   down to :data:`~agentls.engine.prompt.tool_call_shrink.RESULT_MIN_CHARS`);
4. then drop the last messages' older groups too, up to the last call and its results.

Always kept: the system levels, a summary message at the front of the history, the newest
message from the person (a run's request, a follow-up), and the last call with its results
(shrunk, their outcomes readable) when it belongs to the newest request or the turn a
follow-up directly follows; a call from an older turn is history like any other group.
Until step 3 the last :data:`KEEP_LAST` messages and the new messages are sent whole. A
history never starts with a tool result; a call is never separated from its results.

Compaction (``engine/prompt/compaction.py``) replaces the older part of a long history by a summary
the model writes; :func:`summary_message` is how that summary sits at the front of a history.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from agentls.engine.prompt.tokens import CalibrationKey, TokenEstimator
from agentls.engine.prompt.tool_call_shrink import RESULT_MIN_CHARS, cut_result, shrink_tool_calls
from agentls.llm.backend import BackendError
from agentls.llm.messages import Message, ToolSpec
from agentls.tools.output import truncate_middle

PROMPT_BUDGET_FRACTION = 0.8  # of the context window; the rest is for the answer
KEEP_LAST = 4
CUT_TOOL_RESULTS_OVER = 2_000  # characters; shorter results are kept whole
CUT_TOOL_RESULTS_TO = 1_000  # characters of head and tail kept of a cut result
DROP_STEP_FRACTION = 0.1  # dropped tokens are rounded up to this share of the budget
KEEP_AFTER_PREVIOUS_FRACTION = 0.25  # of the budget: repeating a drop never keeps less

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
    shrunk_calls: int = 0  # assistant messages sent with their calls' arguments shrunk


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
    if plan.total <= limit:
        return plan.result()
    for result_chars in (CUT_TOOL_RESULTS_OVER, RESULT_MIN_CHARS):
        plan.shrink_recent(result_chars)
        if plan.total <= limit:
            return plan.result()
    plan.drop_recent(plan.total - limit)
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
    """After the server refused ``previous`` as too long: something smaller. First cut every
    old tool result and drop the older half of the history ``previous`` still sent; when that
    is no smaller, shrink the last messages' calls and results; then drop their older groups.

    When the result is no smaller than ``previous`` (its ``estimated_tokens``), nothing is
    left to take out: the request and the last call with its results alone are too long.
    """
    plan = _Plan(system, history, new, estimator, key, tools, keep_last)

    def smaller() -> bool:
        return plan.result().estimated_tokens < previous.estimated_tokens

    plan.cut_old_tool_results()
    plan.drop_to(previous.dropped_count)
    plan.drop_half()
    if smaller():
        return plan.result()
    for result_chars in (CUT_TOOL_RESULTS_OVER, RESULT_MIN_CHARS):
        plan.shrink_recent(result_chars)
    if smaller():
        return plan.result()
    plan.drop_recent(math.inf)
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
        self.recent = group_start(conversation, max(first, len(conversation) - keep_last), first)
        self.drop_end = group_start(conversation, min(self.recent, len(history)), first)
        sizes = [estimator.message_tokens(m) for m in conversation]
        self.sizes = sizes
        self.total = (
            estimator.raw_estimate(system, tools)
            + sum(sizes[: self.lead])
            + sum(sizes[first:])
        )
        self.start = first  # first message sent after the summary
        self.cut_at: set[int] = set()
        self.shrunk_at: set[int] = set()
        # The newest message from the person is sent even when older ones around it go.
        self.pinned = next((i for i in range(len(conversation) - 1, first - 1, -1)
                            if conversation[i].role == "user"
                            and not is_summary(conversation[i])), None)
        self.pinned_out = False  # the pointer passed it: it is sent on its own
        last_call = next((i for i in range(len(conversation) - 1, first - 1, -1)
                          if conversation[i].tool_calls), len(conversation) - 1)
        self.last_group = max(first, min(last_call, len(conversation) - 1))

    def _replace(self, i: int, message: Message) -> None:
        self.conversation[i] = message
        size = self.estimator.message_tokens(message)
        if i >= self.start or (i == self.pinned and self.pinned_out):
            self.total += size - self.sizes[i]
        self.sizes[i] = size

    def _shrink(self, i: int, result_chars: int) -> None:
        message = self.conversation[i]
        if message.role == "tool" and len(message.content or "") > result_chars:
            # Over CUT_TOOL_RESULTS_OVER: to CUT_TOOL_RESULTS_TO (memoised); shorter limits cut
            # to themselves.
            self._replace(i, cut_tool_result(message) if result_chars == CUT_TOOL_RESULTS_OVER
                          else cut_result(message, result_chars))
            self.cut_at.add(i)
        elif message.role == "assistant" and message.tool_calls:
            shorter = shrink_tool_calls(message)
            if shorter is not message:
                self._replace(i, shorter)
                self.shrunk_at.add(i)

    def cut_old_tool_results(self) -> None:
        """Old results to head and tail, old calls' long arguments to a head and a note."""
        for i in range(self.start, self.recent):
            self._shrink(i, CUT_TOOL_RESULTS_OVER)

    def shrink_recent(self, result_chars: int) -> None:
        """The last messages' results to ``result_chars`` and their calls' arguments shrunk;
        the newest message from the person stays whole."""
        for i in range(max(self.start, self.recent), len(self.conversation)):
            if i != self.pinned:
                self._shrink(i, result_chars)

    def drop_recent(self, raw_tokens: float) -> None:
        """The last resort: drop groups of the last messages too, oldest first, up to the last
        call and its results (and never the newest message from the person)."""
        self.drop_end = max(self.drop_end, self.last_group)
        self.drop_oldest(raw_tokens)

    def _group_end(self) -> int:
        end = self.start + 1
        while end < self.drop_end and self.conversation[end].role == "tool":
            end += 1
        return end

    def _group_size(self, end: int) -> int:
        return sum(self.sizes[i] for i in range(self.start, end) if i != self.pinned)

    def _drop_group(self) -> None:
        end = self._group_end()
        self.total -= self._group_size(end)
        if self.pinned is not None and self.start <= self.pinned < end:
            self.pinned_out = True
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
            if self.total - self._group_size(end) < keep_tokens:
                return
            self._drop_group()

    def drop_half(self) -> None:
        goal = self.start + math.ceil((self.drop_end - self.start) / 2)
        while self.start < self.drop_end and self.start < goal:
            self._drop_group()

    def result(self) -> TrimResult:
        conversation = self.conversation
        pinned = [conversation[self.pinned]] if self.pinned_out and self.pinned is not None \
            else []
        return TrimResult(
            messages=[*self.system, *conversation[: self.lead], *pinned,
                      *conversation[self.start :]],
            dropped_count=self.start - self.lead - len(pinned),
            cut_tool_results=sum(1 for i in self.cut_at if i >= self.start),
            estimated_tokens=self.estimator.scale(self.key, self.total),
            shrunk_calls=sum(1 for i in self.shrunk_at if i >= self.start),
        )


def group_start(conversation: Sequence[Message], index: int, floor: int) -> int:
    """``index``, moved back onto the call whose results it would otherwise split."""
    while floor < index < len(conversation) and conversation[index].role == "tool":
        index -= 1
    return index


# --- the summary message ----------------------------------------------------------------


def summary_message(text: str) -> Message:
    """The message that stands for the compacted part of a history in future requests.

    A user message rather than a system one: it sits after the prompt levels, and many chat
    templates refuse a system message there. Its header says it is not a new request.
    """
    return Message.user(f"{SUMMARY_HEADER}\n\n{text.strip()}")


def is_summary(message: Message) -> bool:
    return message.role == "user" and (message.content or "").startswith(SUMMARY_MARKER)
