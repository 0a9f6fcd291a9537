"""Compaction: the older part of a long history replaced by a summary the model writes.

:func:`needs_compaction` decides when, :func:`compaction_split` where to cut,
:func:`compaction_request` asks the model, :func:`apply_summary` gives the history future
requests see; :func:`maybe_compact` does all of it for a run and stores the summary (the
session store keeps every message).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from agentls.engine.prompt.history import (
    SUMMARY_HEADER,
    TrimResult,
    group_start,
    is_summary,
    prompt_budget,
    summary_message,
    trim_for_budget,
)
from agentls.engine.prompt.tokens import TokenEstimator
from agentls.engine.sessions.store import SessionStore
from agentls.llm.backend import Backend, BackendError
from agentls.llm.messages import ChatRequest, Message
from agentls.tools.output import truncate_middle

log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGES = 120
COMPACT_AT_FRACTION = 0.9  # of the budget, after trimming
KEEP_RECENT = 12  # messages compaction leaves as they are
SUMMARY_MAX_TOKENS = 2_000
TRANSCRIPT_CHARS = 120_000  # of the older part sent to be summarised
TRANSCRIPT_TOOL_RESULT_CHARS = 1_500
TRANSCRIPT_MESSAGE_CHARS = 6_000
TRANSCRIPT_ARGUMENT_CHARS = 400


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
    split = group_start(history, candidate, lead)
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
    upto = group_start(history, max(lead, min(upto_index, len(history))), lead)
    while upto < len(history) and history[upto].role == "tool":  # results with no call at all
        upto += 1
    return [summary_message(summary_text), *history[upto:]]


async def maybe_compact(store: SessionStore, estimator: TokenEstimator, backend: Backend,
                        session_id: str, history: list[Message], seqs: list[int | None],
                        system: list[Message], *, max_messages: int,
                        context_tokens: int) -> list[Message]:
    """Summarise the older part of a history that is long (``compaction.max_messages``) or
    that trimming can no longer fit comfortably (90% of the budget); the summary's
    ``through_seq`` marks the last stored message it stands for."""
    budget = prompt_budget(context_tokens)
    key = (backend.name, backend.model)
    trimmed = await asyncio.to_thread(trim_for_budget, system, history, [], budget,
                                      estimator, key)
    if not needs_compaction(history, max_messages=max_messages, trimmed=trimmed,
                            budget_tokens=budget):
        return history
    split = compaction_split(history)
    if split <= 0:
        return history
    window = context_tokens
    # The transcript must fit the model too: about three characters per token of half the
    # window, and the summary at most a quarter of it.
    ask = compaction_request(history[:split],
                             max_transcript_chars=min(TRANSCRIPT_CHARS, window * 3 // 2),
                             max_summary_tokens=min(SUMMARY_MAX_TOKENS, window // 4))
    try:
        response = await backend.complete(ask)
    except BackendError as exc:  # trimming still keeps the request within the budget
        log.warning("compacting session %s failed, trimming instead: %s", session_id, exc)
        return history
    if not response.text.strip():
        return history
    compacted = apply_summary(history, response.text, split)
    kept = seqs[len(history) - (len(compacted) - 1):]
    first_kept = next((seq for seq in kept if seq is not None), None)
    through = (first_kept - 1 if first_kept is not None
               else max((seq for seq in seqs if seq is not None), default=0))
    store.append(session_id, summary_message(response.text), kind="summary",
                 metadata={"through_seq": through})
    return compacted
