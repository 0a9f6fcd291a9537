"""A session's history as the person saw it: one record per turn, ready to display.

A turn is one request of the person and everything the run did for it: the person's own
words (never the prompt AgentLS built around them), the chips of what was attached, what was
refused, the notes AgentLS gave the model (a rejected edit, say) as a field of their own, the
assistant's text (after a proposed change, "proposed: …" as it streamed: a claim until the
review's outcome line), each tool call with its short summary, the files changed, the run's
outcome, the model that answered and when it started and ended. Clients render these
records and derive nothing from stored rows.

Turns are paged from the end (the latest first to show): ``page(store, id, limit, before)``
reads only the rows of the turns it returns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentls.engine import review_notes
from agentls.engine.loop.tool_dispatch import ProposedClaims, as_proposed, shown_result
from agentls.engine.sessions.store import SessionStore

MAX_ARGUMENT_CHARS = 300
_LEGACY_REQUEST = "\n\n# Request\n\n"
_LEGACY_CONTEXT = "# Context attached by the person\n\n"


@dataclass(frozen=True)
class HistoryPage:
    session_id: str
    turns: list[dict[str, Any]]
    start: int  # index of the first turn returned
    total: int  # turns in the session

    def to_dict(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "turns": self.turns, "start": self.start,
                "total": self.total, "hasMore": self.start > 0}


def page(store: SessionStore, session_id: str, *, limit: int = 50,
         before: int | None = None) -> HistoryPage:
    """Up to ``limit`` turns ending before turn ``before`` (None: the latest ones)."""
    starts = store.turn_starts(session_id)
    total = len(starts)
    end = total if before is None else max(0, min(before, total))
    start = max(0, end - limit)
    if start >= end:
        return HistoryPage(session_id, [], start, total)
    rows = store.display_rows(session_id, starts[start], starts[end] if end < total else None)
    boundaries = set(starts[start:end])
    turns: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    results: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row[0] in boundaries:
            current = _new_turn(start + len(turns), row)
            turns.append(current)
            results = {}
        elif current is not None:
            _add(current, row, results)
    for turn in turns:
        _finish(turn)
    return HistoryPage(session_id, turns, start, total)


def _new_turn(index: int, row: tuple[Any, ...]) -> dict[str, Any]:
    _, _, content, _, _, _, metadata, created_at = row
    meta = json.loads(metadata) if metadata else {}
    text = meta.get("prompt")
    notes = list(meta.get("notes") or [])
    if not isinstance(text, str):  # stored before turns kept the person's words apart
        text, told = _legacy_request(content or "")
        notes += told
    return {
        "index": index, "runId": meta.get("run_id"),
        "user": {"text": text, "attachments": list(meta.get("attachments") or []),
                 "refused": list(meta.get("refused") or []), "notes": notes,
                 "trimmed": list(meta.get("trimmed") or [])},
        "model": meta.get("model"), "backend": meta.get("backend"), "mode": meta.get("mode"),
        "steps": [], "outcome": meta.get("outcome"), "startedAt": created_at,
        "endedAt": meta.get("ended_at"), "claims": ProposedClaims(),
    }


def _legacy_request(content: str) -> tuple[str, list[str]]:
    notes, content = review_notes.display(content, {})  # the old note prefix, taken apart
    content = content.lstrip("\n")
    if content.startswith(_LEGACY_CONTEXT) and _LEGACY_REQUEST in content:
        content = content.rsplit(_LEGACY_REQUEST, 1)[1]
    return content, notes


def _add(turn: dict[str, Any], row: tuple[Any, ...],
         results: dict[str, dict[str, Any]]) -> None:
    _, role, content, tool_calls, tool_call_id, kind, metadata, created_at = row
    steps: list[dict[str, Any]] = turn["steps"]
    if kind == "actions":
        meta = json.loads(metadata) if metadata else {}
        turn["changes"] = {"text": content or "", "applied": meta.get("applied")}
        return
    if kind != "message":
        return  # summaries
    if role == "user":  # AgentLS's own "continue" request: the answer goes on
        turn["glue"] = True
        return
    if role == "assistant":
        glue = turn.pop("glue", False)
        if content:
            if glue and steps and steps[-1]["kind"] == "text":
                steps[-1]["text"] += content
            else:  # after a proposed change: "proposed: …", as it streamed
                steps.append({"kind": "text", "text": turn["claims"].text(content)})
        if metadata:
            model = json.loads(metadata).get("model")
            if model:
                turn["answeredBy"] = model
        for call in json.loads(tool_calls) if tool_calls else ():
            step: dict[str, Any] = {"kind": "toolCall", "id": call["id"], "name": call["name"],
                                    "arguments": _short(call["arguments"]), "ok": None,
                                    "summary": ""}
            steps.append(step)
            results[call["id"]] = step
        turn["lastAt"] = created_at
    elif role == "tool" and tool_call_id in results:
        step = results.pop(tool_call_id)
        meta = json.loads(metadata) if metadata else {}
        if "summary" in meta:
            step["ok"], step["summary"] = bool(meta.get("ok")), str(meta["summary"])
        else:
            ok, summary = shown_result(content or "")
            step["ok"], step["summary"] = ok, summary
        turn["claims"].tool_result(step["name"], bool(step["ok"]), step["summary"])
        step["summary"] = as_proposed(step["name"], bool(step["ok"]), step["summary"])
        turn["lastAt"] = created_at


def _short(arguments: str) -> str:
    return arguments if len(arguments) <= MAX_ARGUMENT_CHARS else (
        arguments[: MAX_ARGUMENT_CHARS - 1] + "…")


def _finish(turn: dict[str, Any]) -> None:
    turn.pop("glue", None)
    turn.pop("claims", None)
    last = turn.pop("lastAt", None)
    if turn["endedAt"] is None:
        turn["endedAt"] = last
    answered = turn.pop("answeredBy", None)
    if answered:
        turn["model"] = answered
    ended = turn["endedAt"]
    turn["durationMs"] = (round((ended - turn["startedAt"]) * 1000)
                          if isinstance(ended, int | float) else None)
