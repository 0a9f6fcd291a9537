"""The two ways to ask for a next edit, and reading the model's rewrite back.

* ``zeta``: the editable-region format Zed's open Zeta models were trained on (a raw
  ``/v1/completions`` prompt): the recent edits as diffs, then the excerpt with
  ``<|editable_region_start|>`` / ``<|editable_region_end|>`` around the region and
  ``<|user_cursor_is_here|>`` at the cursor; the model writes the excerpt again, the region
  rewritten.
* ``chat``: any chat model, given the same markers and strict rules in a system prompt, plus
  what Zeta has no room for: related definitions and the suggestions the person turned down.

Either answer is read the same way (``parse_rewrite``): exactly one start and one end marker,
the region between them. Text the model wrote around the region must be the context it was
shown (it may stop early): a model that changed anything outside the region is refused
(``OutsideRegion``), as is an answer without its markers (``Unreadable``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentls.engine.next_edit.recent_edits import Edit
from agentls.engine.next_edit.region import Excerpt

REGION_START = "<|editable_region_start|>"
REGION_END = "<|editable_region_end|>"
CURSOR = "<|user_cursor_is_here|>"
FILE_START = "<|start_of_file|>"

ZETA_INSTRUCTION = (
    "You are a code completion assistant and your task is to analyze user edits and then "
    "rewrite an excerpt that the user provides, suggesting the appropriate edits within the "
    "excerpt, taking into account the cursor location.")

CHAT_SYSTEM = (
    "You predict the next edit a programmer will make. You get their recent edits as diffs "
    f"and an excerpt of the file they are editing, where {REGION_START} and {REGION_END} "
    f"mark the editable region and {CURSOR} marks the cursor. Reply with ONLY the editable "
    f"region rewritten with the edit they are about to make, between the same markers: "
    f"{REGION_START} on its own line, the region, {REGION_END} on its own line. Continue "
    "what the recent edits started (a renamed name renamed everywhere in the region, a new "
    "field used where it belongs, a fix made in the same places). Change nothing outside "
    "the region; leave out the cursor marker; no explanation, no markdown fences. If no "
    "edit is due, write the region unchanged.")


class Unreadable(ValueError):
    """The model's answer does not hold one editable region."""


class OutsideRegion(ValueError):
    """The model's answer changes text outside the editable region."""


@dataclass(frozen=True)
class Prompt:
    format: str  # "zeta" or "chat"
    text: str  # the raw completion prompt, or the chat user message
    system: str = ""


def events(edits: Sequence[Edit]) -> str:
    return "\n\n".join(f"User edited {e.path}:\n```diff\n{e.diff}\n```" for e in edits)


def fit_edits(edits: Sequence[Edit], budget_tokens: int, chars_per_token: float = 3.5
              ) -> list[Edit]:
    """The newest edits whose diffs fit the budget, oldest first."""
    left = int(budget_tokens * chars_per_token)
    chosen: list[Edit] = []
    for edit in reversed(edits):
        cost = len(edit.diff) + len(edit.path) + 24
        if cost > left:
            break
        chosen.append(edit)
        left -= cost
    chosen.reverse()
    return chosen


def marked_excerpt(path: str, excerpt: Excerpt) -> str:
    region = excerpt.region
    at = excerpt.cursor - excerpt.start
    parts = [f"```{path}\n"]
    if excerpt.at_file_start:
        parts.append(f"{FILE_START}\n")
    parts += [excerpt.above, f"{REGION_START}\n", region[:at], CURSOR, region[at:],
              f"\n{REGION_END}", excerpt.below, "\n```"]
    return "".join(parts).replace("\r\n", "\n")


def zeta_prompt(path: str, excerpt: Excerpt, edits: Sequence[Edit]) -> Prompt:
    text = (f"### Instruction:\n{ZETA_INSTRUCTION}\n\n### User Edits:\n\n{events(edits)}\n\n"
            f"### User Excerpt:\n\n{marked_excerpt(path, excerpt)}\n\n### Response:\n")
    return Prompt("zeta", text)


def chat_prompt(path: str, excerpt: Excerpt, edits: Sequence[Edit], related: Sequence[str] = (),
                rejected: Sequence[str] = ()) -> Prompt:
    parts = []
    if related:
        parts.append("Related definitions:\n" + "\n\n".join(related))
    parts.append("Recent edits:\n" + (events(edits) or "(none)"))
    if rejected:
        parts.append("Suggestions the programmer turned down (do not suggest them again):\n"
                     + "\n".join(f"- {r!r}" for r in rejected))
    parts.append(f"Excerpt of {path}:\n{marked_excerpt(path, excerpt)}")
    return Prompt("chat", "\n\n".join(parts), CHAT_SYSTEM)


def region_ended(answer: str) -> bool:
    """The answer already holds the region's end: the rest of the stream is not needed."""
    return f"\n{REGION_END}" in answer or answer.lstrip().startswith(REGION_END)


def parse_rewrite(answer: str, excerpt: Excerpt) -> str:
    """The rewritten editable region ("\\n" line endings) from the model's answer."""
    content = answer.replace(CURSOR, "")
    if content.count(REGION_START) != 1 or content.count(REGION_END) != 1:
        raise Unreadable(f"expected one {REGION_START} and one {REGION_END}, found "
                         f"{content.count(REGION_START)} and {content.count(REGION_END)}")
    head, rest = content.split(REGION_START, 1)
    body, tail = rest.split(REGION_END, 1)
    if body.startswith("\n"):
        body = body[1:]
    elif body.startswith("\r\n"):
        body = body[2:]
    if body.endswith("\n"):
        body = body[:-1]
    elif body == "" and not excerpt.region:
        body = ""
    _check_outside(head, tail, excerpt)
    return body.replace("\r\n", "\n")


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]


def _check_outside(head: str, tail: str, excerpt: Excerpt) -> None:
    head_lines = [line for line in _lines(head) if not line.startswith("```")
                  and line != FILE_START]
    while head_lines and not head_lines[0]:
        head_lines.pop(0)
    while head_lines and not head_lines[-1]:
        head_lines.pop()
    if head_lines:
        above = _lines(excerpt.above)
        while above and not above[-1]:
            above.pop()
        if above[len(above) - len(head_lines):] != head_lines:
            raise OutsideRegion("the answer changes the lines above the editable region")
    tail_text = tail.split("```", 1)[0]
    tail_lines = _lines(tail_text)
    while tail_lines and not tail_lines[-1]:
        tail_lines.pop()
    if tail_lines and tail_lines[0] == "":
        tail_lines.pop(0)
    if tail_lines:
        below = _lines(excerpt.below)
        if below and below[0] == "":
            below.pop(0)
        full, last = tail_lines[:-1], tail_lines[-1]
        if below[:len(full)] != full or len(below) <= len(full) or not below[
                len(full)].startswith(last):  # the model may stop mid-line
            raise OutsideRegion("the answer changes the lines below the editable region")
