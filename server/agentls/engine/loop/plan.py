"""``update_plan``: the model's own task list, for front-ends that show one (ACP's ``plan``).

Offered only when the front-end says it shows plans (``Frontend.shows_plan``); the whole
list is sent each time (it replaces the last one) and comes back as a ``PlanEvent``. The
call and its result are stored like any other, so a reopened session can show the plan
again (``last_plan``).
"""

from __future__ import annotations

from typing import Any, Literal

from agentls.llm.messages import ToolCall, ToolSpec
from agentls.tools.output import fail, ok

UPDATE_PLAN = "update_plan"
MAX_STEPS = 50
MAX_STEP_CHARS = 300
PlanStatus = Literal["pending", "in_progress", "completed"]
STATUSES: tuple[PlanStatus, ...] = ("pending", "in_progress", "completed")

UPDATE_PLAN_SPEC = ToolSpec(
    UPDATE_PLAN,
    "Keep a short plan of the task, shown to the person as a checklist: send the whole list "
    "each time (it replaces the last one), one step in_progress at a time. Use it for work of "
    "several steps; skip it for a one-step answer.",
    {
        "type": "object",
        "properties": {
            "plan": {"type": "array", "maxItems": MAX_STEPS, "items": {
                "type": "object",
                "properties": {
                    "step": {"type": "string", "description": "What to do, a few words."},
                    "status": {"type": "string", "enum": list(STATUSES)},
                },
                "required": ["step", "status"],
            }},
        },
        "required": ["plan"],
    },
)


def plan_steps(call: ToolCall) -> list[tuple[str, PlanStatus]] | dict[str, Any]:
    """The call's steps, or the failed result that tells the model what to fix."""
    try:
        args = call.parsed_arguments()
    except ValueError:
        args = None
    raw = args.get("plan") if isinstance(args, dict) else None
    if not isinstance(raw, list) or len(raw) > MAX_STEPS:
        return fail("INVALID_ARGUMENTS", f"update_plan needs 'plan': a list of at most "
                    f"{MAX_STEPS} steps, each {{step, status}}.",
                    schema=UPDATE_PLAN_SPEC.parameters)
    steps: list[tuple[str, PlanStatus]] = []
    for index, item in enumerate(raw):
        step = item.get("step") if isinstance(item, dict) else None
        status = item.get("status") if isinstance(item, dict) else None
        if not isinstance(step, str) or not step.strip() or status not in STATUSES:
            return fail("INVALID_ARGUMENTS", f"update_plan: step {index + 1} needs a 'step' "
                        f"text and a 'status' of {', '.join(STATUSES)}.",
                        schema=UPDATE_PLAN_SPEC.parameters)
        steps.append((step.strip()[:MAX_STEP_CHARS], status))
    return steps


def plan_result(steps: list[tuple[str, PlanStatus]]) -> dict[str, Any]:
    done = sum(1 for _, status in steps if status == "completed")
    return ok(shown=f"plan of {len(steps)} steps shown to the person ({done} completed)")
