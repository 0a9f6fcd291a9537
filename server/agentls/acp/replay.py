"""session/load: the stored conversation replayed as the client would have seen it: the
person's messages, the agent's text (an answer cut by a cancel or a timeout, then a note that
it stopped there), its tool calls with their results."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from acp.schema import ToolCallProgress, ToolCallStart

from acp import update_agent_message_text, update_agent_thought_text, update_user_message_text
from agentls.acp import tool_calls
from agentls.acp.frontend import plan_update
from agentls.engine.loop.plan import UPDATE_PLAN, plan_steps

if TYPE_CHECKING:
    from acp.interfaces import Client

    from agentls.engine.sessions.store import SessionStore
    from agentls.workspace.fence import Workspace


async def replay(conn: Client, store: SessionStore, session_id: str,
                 workspace: Workspace) -> None:
    history = await asyncio.to_thread(store.history, session_id, include_summaries=False)
    plans: set[str] = set()  # update_plan calls: replayed as the plan, their results not shown
    for stored in history:
        if stored.kind != "message":
            continue
        message = stored.message
        if message.role == "tool" and message.tool_call_id in plans:
            continue
        for update in _updates(message, workspace, stored.metadata.get("stopped"), plans):
            await conn.session_update(session_id=session_id, update=update)


STOPPED = {"cancelled": "cancelled here", "timeout": "the run timed out here"}


def _updates(message: Any, workspace: Workspace, stopped: Any, plans: set[str]) -> list[Any]:
    if message.role == "user" and message.content:
        return [update_user_message_text(message.content)]
    if message.role == "assistant":
        out: list[Any] = []
        if message.content:
            out.append(update_agent_message_text(message.content))
        if stopped in STOPPED:  # said as AgentLS's note (a thought), never as the answer
            out.append(update_agent_thought_text(f"AgentLS: {STOPPED[stopped]}\n"))
        for call in message.tool_calls:
            if call.name == UPDATE_PLAN:
                plans.add(call.id)
                steps = plan_steps(call)
                if not isinstance(steps, dict):
                    out.append(plan_update(steps))
                continue
            args = tool_calls.parse_arguments(call.arguments)
            out.append(ToolCallStart(
                session_update="tool_call", tool_call_id=call.id,
                title=tool_calls.title_of(call.name, args), kind=tool_calls.kind_of(call.name),
                status="in_progress", raw_input=args,
                locations=tool_calls.locations_of(workspace, call.name, args) or None))
        return out
    if message.role == "tool" and message.tool_call_id:
        failed = '"ok": false' in (message.content or "")[:200]
        return [ToolCallProgress(
            session_update="tool_call_update", tool_call_id=message.tool_call_id,
            status="failed" if failed else "completed",
            content=[tool_calls.text_content(message.content or "")])]
    return []
