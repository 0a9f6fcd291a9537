"""What of a long conversation goes into the next request: trimming, and the summary message.

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

Compaction (``engine/compaction.py``) replaces the older part of a long history by a summary
the model writes; :func:`summary_message` is how that summary sits at the front of a history.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from agentls.engine.tokens import CalibrationKey, TokenEstimator
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
