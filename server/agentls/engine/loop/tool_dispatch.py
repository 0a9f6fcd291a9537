"""Tool dispatch for the agent loop: run one step's tool calls, answer ``ask_user``, and
report each call to the front-end.

Read-only calls next to each other run together; changing ones run in order. A call cut off
at the output limit is not run (its arguments are incomplete); the model is told to resend it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from agentls.engine.events import (
    TOOL_CALL_ID,
    Frontend,
    PlanEvent,
    StatusEvent,
    ToolCallStarted,
    ToolResultEvent,
)
from agentls.engine.loop.plan import UPDATE_PLAN, plan_result, plan_steps
from agentls.engine.loop.turns import RunState, append_message
from agentls.engine.sessions.store import SessionStore
from agentls.llm.messages import Message, ToolCall, ToolSpec
from agentls.tools.output import fail, ok, to_json
from agentls.tools.permission_gate import ApprovalAnswer, ApprovalRequest
from agentls.tools.registry import ToolBox, ToolOutcome

ASK_USER = "ask_user"
ASK_USER_SPEC = ToolSpec(
    ASK_USER,
    "Ask the person a multiple-choice question when you cannot decide yourself (which of two "
    "designs, whether to delete something). Returns their choice.",
    {
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "The question, one sentence."},
            "options": {"type": "array", "items": {"type": "string"}, "minItems": 2,
                        "description": "The choices, short."},
        },
        "required": ["question", "options"],
    },
)
CUT_OFF_CALL = (
    "This tool call was cut off at the output limit, so its arguments are incomplete and it "
    "was not run. Send it again, smaller: split big edits into several calls."
)


async def run_tools(
    store: SessionStore,
    run: RunState,
    calls: Sequence[ToolCall],
    toolbox: ToolBox,
    frontend: Frontend,
    automation: bool,
    cut_off: bool,
) -> None:
    """Read-only calls next to each other run together; changing ones run in order."""
    results: dict[str, str] = {}
    batch: list[ToolCall] = []

    async def run_call(call: ToolCall) -> None:
        results[call.id] = await _call(call, toolbox, frontend, automation, run)

    async def flush() -> None:
        await asyncio.gather(*(run_call(c) for c in batch))
        batch.clear()

    try:
        for call in calls:
            frontend.on_event(ToolCallStarted(call_id=call.id, name=call.name,
                                              arguments=call.arguments))
            if cut_off and _truncated(call):
                results[call.id] = to_json(fail("CUT_OFF", CUT_OFF_CALL))
                frontend.on_event(ToolResultEvent(call_id=call.id, name=call.name, ok=False,
                                                  summary="cut off at the output limit"))
            elif toolbox.is_read_only(call.name) or call.name not in toolbox.names():
                batch.append(call)
            else:
                await flush()
                await run_call(call)
        await flush()
    finally:
        # Stopped midway (timeout, cancel), the calls that did run keep their results: the
        # ChangeSet holds their edits. turns.close_open_calls answers the others.
        for call in calls:
            if call.id in results:
                ok_, summary = shown_result(results[call.id])
                append_message(store, run, Message.tool(call.id, results[call.id], call.name),
                               {"ok": ok_, "summary": summary})


async def _call(call: ToolCall, toolbox: ToolBox, frontend: Frontend,
                automation: bool, run: RunState) -> str:
    if call.name == ASK_USER:
        result = await _ask_user(call, frontend, automation)
        text = to_json(result)
        frontend.on_event(ToolResultEvent(call_id=call.id, name=call.name,
                                          ok=bool(result["ok"]), summary=result_summary(result)))
        return text
    if call.name == UPDATE_PLAN and getattr(frontend, "shows_plan", False):
        steps = plan_steps(call)
        result = steps if isinstance(steps, dict) else plan_result(steps)
        if not isinstance(steps, dict):
            frontend.on_event(PlanEvent(steps=tuple(steps)))
        frontend.on_event(ToolResultEvent(call_id=call.id, name=call.name,
                                          ok=bool(result["ok"]), summary=result_summary(result)))
        return to_json(result)
    token = TOOL_CALL_ID.set(call.id)
    try:
        outcome: ToolOutcome = await toolbox.call(call.name, call.arguments)
    finally:
        TOOL_CALL_ID.reset(token)
    if call.name == "shell_exec" and outcome.arguments and outcome.result.get("ok") is not None:
        exit_code = outcome.result.get("exit_code")
        if outcome.result.get("error") != "USER_REJECTED":
            run.commands.append((str(outcome.arguments.get("command", "")),
                                 exit_code if isinstance(exit_code, int) else None))
    frontend.on_event(ToolResultEvent(call_id=call.id, name=call.name, ok=outcome.ok,
                                      summary=result_summary(outcome.result),
                                      output=_output(outcome.result)))
    return outcome.text


async def _ask_user(call: ToolCall, frontend: Frontend, automation: bool) -> dict[str, Any]:
    args = _arguments(call)
    question = args.get("question") if isinstance(args, dict) else None
    options = args.get("options") if isinstance(args, dict) else None
    if not isinstance(question, str) or not isinstance(options, list) or len(options) < 2:
        return fail("INVALID_ARGUMENTS", "ask_user needs a 'question' string and at least "
                    "two 'options'.", schema=ASK_USER_SPEC.parameters)
    # A front-end may say it cannot show questions (an editor without message requests).
    if not automation and not getattr(frontend, "can_ask", True):
        frontend.on_event(StatusEvent(message=f"The agent asked “{question}”, but this "
                                      "editor cannot show questions: it decides on its own."))
        automation = True
    if automation:
        return fail("NO_ONE_TO_ASK", "Nobody can answer questions in this run "
                    "(non-interactive). Decide yourself, say which option you chose and "
                    "why, and carry on.")
    answer = await frontend.ask(question, [str(o) for o in options])
    if answer is None:
        return fail("NO_ANSWER", "The person dismissed the question. Decide yourself or "
                    "stop and explain what you need.")
    return ok(answer=answer)


def confirm_with(frontend: Frontend) -> Any:
    """The tools' ``confirm`` callback: approval requests go to the front-end."""
    async def confirm(request: ApprovalRequest) -> ApprovalAnswer:
        return await frontend.confirm(request)

    return confirm


def _arguments(call: ToolCall) -> dict[str, Any] | None:
    try:
        return call.parsed_arguments()
    except ValueError:
        return None


def _truncated(call: ToolCall) -> bool:
    return _arguments(call) is None


def _output(result: dict[str, Any]) -> str:
    """A command's output as a person reads it: stdout, stderr, then how it ended."""
    if "stdout" not in result and "stderr" not in result:
        return ""
    parts = [str(result.get("stdout") or ""), str(result.get("stderr") or "")]
    text = "\n".join(p.rstrip("\n") for p in parts if p)
    return f"{text}\n[exit code {result.get('exit_code')}]".lstrip("\n")


def shown_result(text: str) -> tuple[bool, str]:
    """(ok, summary) of a stored tool result, as its ``toolResult`` event showed it."""
    try:
        result = json.loads(text)
    except ValueError:
        return True, ""
    if not isinstance(result, dict):
        return True, ""
    if result.get("error") == "CUT_OFF":
        return False, "cut off at the output limit"
    return bool(result.get("ok")), result_summary(result)


def proposes_change(name: str, ok: bool, summary: str) -> bool:
    """Whether a tool result is a change put in the ChangeSet, proposed to the person."""
    from agentls.engine.modes import EDIT_TOOLS

    return ok and name in EDIT_TOOLS and summary.startswith("ok")


def as_proposed(name: str, ok: bool, summary: str) -> str:
    """A change tool's "ok" as an editor shows it before the review ends: "proposed"
    (DESIGN.md 13: the change lands only once the person has kept it)."""
    if proposes_change(name, ok, summary):
        return "proposed" + summary[2:]
    return summary


PROPOSED_CLAIM = "proposed: "


class ProposedClaims:
    """The model's own text after it proposed a change ("Fixed add() ...") as an editor
    shows it: "proposed: Fixed add() ...", since nothing has landed until the person keeps it
    (DESIGN.md 13); the outcome line after the review says what did. Fed one turn's tool
    results and text in order (streamed deltas, or stored steps): each text step after the
    turn's first proposed change starts with the mark, once."""

    def __init__(self) -> None:
        self.proposed = False  # a change was proposed earlier in the turn
        self._marked = True  # the current text step has its mark (or needs none)

    def tool_result(self, name: str, ok: bool, summary: str) -> None:
        self.proposed = self.proposed or proposes_change(name, ok, summary)
        self._marked = not self.proposed  # the next text is a new step

    def text(self, text: str) -> str:
        """``text`` (a delta or a whole step), marked where the step's words begin."""
        if self._marked:
            return text
        start = len(text) - len(text.lstrip())
        if start == len(text):
            return text  # only blank lines so far: the words come in a later delta
        self._marked = True
        return text[:start] + PROPOSED_CLAIM + text[start:]


def result_summary(result: dict[str, Any]) -> str:
    if result.get("ok"):
        for key in ("path", "action", "count", "exit_code", "answer"):
            if key in result:
                return f"ok ({key}: {result[key]})"
        return "ok"
    return f"{result.get('error', 'failed')}: {str(result.get('message', ''))[:200]}"
