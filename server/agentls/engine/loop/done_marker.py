"""The completion protocol of ``agentls loop``: does the agent say the task is finished?

Two modes (seed 001, RG-009 and RG-010):

``marker``
    Done if and only if the final non-empty line of the output is exactly ``DONE``. Lines are
    compared after removing surrounding whitespace (so ``\\r\\n`` endings and indentation do
    not matter); ``DONE.``, ``**DONE**``, ``done`` or ``DONE`` followed by more text are not
    done. Anything else means *continue*: the marker mode never fails.

``json``
    The output must contain a JSON object ``{"status": "continue" | "done" | "error",
    "summary"?: str, "next"?: str}``. Every top-level JSON object in the text is found (prose,
    code fences and braces inside JSON strings are no obstacle); objects without a ``status``
    key (a code sample, say) are skipped, and the *last* object with a ``status`` decides.
    Its status is read case-insensitively; ``summary`` and ``next`` may be missing or null;
    other keys are ignored. No object with a status, or an invalid one (unknown status,
    non-text summary), is ``invalid-json``, which stops the loop.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, cast

CompletionMode = Literal["marker", "json"]
CompletionStatus = Literal["continue", "done", "error", "invalid-json"]

MARKER = "DONE"
STATUSES = ("continue", "done", "error")

_decoder = json.JSONDecoder()


@dataclass(frozen=True)
class Completion:
    """What one output says about the task. ``problem`` explains an ``invalid-json``."""

    status: CompletionStatus
    summary: str | None = None
    next: str | None = None
    problem: str = ""

    @property
    def done(self) -> bool:
        return self.status == "done"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "summary": self.summary, "next": self.next,
                "problem": self.problem or None}


def check(text: str, mode: CompletionMode) -> Completion:
    return check_marker(text) if mode == "marker" else check_json(text)


def final_line(text: str) -> str | None:
    """The last line that is not blank, stripped; None for blank text."""
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return None


def check_marker(text: str) -> Completion:
    if final_line(text) == MARKER:
        return Completion("done")
    return Completion("continue")


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every top-level JSON object in ``text``, in order; objects nested in another are part
    of it, not separate results."""
    position = text.find("{")
    while position != -1:
        try:
            value, end = _decoder.raw_decode(text, position)
        except ValueError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            yield value
        position = text.find("{", end)


def check_json(text: str) -> Completion:
    candidates = [obj for obj in json_objects(text) if "status" in obj]
    if not candidates:
        return Completion("invalid-json", problem=(
            'no JSON object with a "status" key in the output; expected '
            '{"status": "continue" | "done" | "error", "summary": "...", "next": "..."}'))
    found = candidates[-1]
    raw_status = found["status"]
    status = raw_status.strip().lower() if isinstance(raw_status, str) else raw_status
    if status not in STATUSES:
        return Completion("invalid-json", problem=(
            f"the last status object has status {json.dumps(raw_status)}; "
            f"expected one of {', '.join(STATUSES)}"))
    fields: dict[str, str | None] = {}
    for name in ("summary", "next"):
        value = found.get(name)
        if value is not None and not isinstance(value, str):
            return Completion("invalid-json", problem=(
                f'"{name}" must be a string or null, not {type(value).__name__}'))
        fields[name] = value
    return Completion(cast(CompletionStatus, status), summary=fields["summary"],
                      next=fields["next"])
