"""The engine's Frontend over ACP: events become ``session/update`` notifications, approvals
become ``session/request_permission``.

``on_event`` is called synchronously by the engine; updates are queued and sent in order by
one task, so the first text chunk leaves as soon as the loop is free and nothing overtakes.
``drain`` waits until everything queued is out (the prompt's answer must come after its
updates).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.schema import (
    AgentPlanUpdate,
    AllowedOutcome,
    PermissionOption,
    PlanEntry,
    TerminalToolCallContent,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

from acp import update_agent_message_text, update_agent_thought_text
from agentls.acp import tool_calls
from agentls.engine.events import (
    ErrorEvent,
    Event,
    PlanEvent,
    ReasoningDelta,
    RetryEvent,
    StatusEvent,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
)
from agentls.engine.loop.plan import UPDATE_PLAN

if TYPE_CHECKING:
    from acp.interfaces import Client

    from agentls.engine.command_runner import CommandRunner
    from agentls.tools.permission_gate import ApprovalAnswer, ApprovalRequest
    from agentls.workspace.fence import Workspace

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 10.0  # for the client's fs/read_text_file; then the file is read from disk

Update = Any  # one of the SDK's session update models


class AcpFrontend:
    interactive = True
    can_ask = True
    shows_plan = True  # the model gets update_plan; its list goes out as a ``plan`` update

    def __init__(self, conn: Client, session_id: str, workspace: Workspace) -> None:
        self.session_id = session_id
        self.workspace = workspace
        self.errors: list[str] = []
        self._conn = conn
        self._queue: asyncio.Queue[Update | None] = asyncio.Queue()
        self._sender = asyncio.create_task(self._send_all(), name=f"acp-updates-{session_id}")
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self._terminals: dict[str, str] = {}  # tool call id -> the client's terminal id
        # Sandboxed commands in the client's terminal (acp/terminal.py), when it has one.
        self.command_runner: CommandRunner | None = None

    def use_terminal(self) -> None:
        from agentls.acp.terminal import ClientTerminal

        self.command_runner = ClientTerminal(self._conn, self.session_id, self.terminal_shown)

    def terminal_shown(self, call_id: str, terminal_id: str) -> None:
        """A command of this call runs in the client's terminal: the call shows it live."""
        self._terminals[call_id] = terminal_id
        self.send(ToolCallProgress(
            session_update="tool_call_update", tool_call_id=call_id, status="in_progress",
            content=[TerminalToolCallContent(type="terminal", terminal_id=terminal_id)]))

    # --- sending -------------------------------------------------------------------------

    def send(self, update: Update) -> None:
        self._queue.put_nowait(update)

    def note(self, text: str) -> None:
        """Something AgentLS (not the model) tells the person: a thought chunk, so it never
        reads as the model's answer."""
        self.send(update_agent_thought_text(f"AgentLS: {text}\n"))

    async def drain(self) -> None:
        self._queue.put_nowait(None)
        await asyncio.shield(self._sender)

    def stop(self) -> None:
        if not self._sender.done():
            self._sender.cancel()

    async def _send_all(self) -> None:
        while True:
            update = await self._queue.get()
            if update is None:
                return
            try:
                await self._conn.session_update(session_id=self.session_id, update=update)
            except Exception:  # the client went away: the run goes on and is recorded
                log.exception("sending a session/update failed")

    # --- the engine's Frontend protocol ---------------------------------------------------

    def on_event(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            if event.text:
                self.send(update_agent_message_text(event.text))
        elif isinstance(event, ReasoningDelta):  # the model's own thinking, where it streams it
            if event.text:
                self.send(update_agent_thought_text(event.text))
        elif isinstance(event, PlanEvent):
            self.send(plan_update(event.steps))
        elif isinstance(event, (ToolCallStarted, ToolResultEvent)) and \
                event.name == UPDATE_PLAN:
            pass  # shown as the plan itself, not as a tool call
        elif isinstance(event, ToolCallStarted):
            self._tool_started(event)
        elif isinstance(event, ToolResultEvent):
            self._tool_finished(event)
        elif isinstance(event, StatusEvent):
            if event.warning or (event.iteration == 0 and event.topic != "instructions"):
                self.note(event.message)  # warnings and notes (what was trimmed, and why)
        elif isinstance(event, RetryEvent):
            self.note(event.text)
        elif isinstance(event, ErrorEvent):
            message = f"{event.message}" + (f" ({event.hint})" if event.hint else "")
            self.errors.append(message)
            self.send(update_agent_message_text(f"\n\nAgentLS: {message}\n"))

    def _tool_started(self, event: ToolCallStarted) -> None:
        args = tool_calls.parse_arguments(event.arguments)
        self._calls[event.call_id] = (event.name, args)
        self.send(ToolCallStart(
            session_update="tool_call", tool_call_id=event.call_id,
            title=tool_calls.title_of(event.name, args), kind=tool_calls.kind_of(event.name),
            status="in_progress", raw_input=args,
            locations=tool_calls.locations_of(self.workspace, event.name, args) or None))

    def _tool_finished(self, event: ToolResultEvent) -> None:
        name, args = self._calls.pop(event.call_id, (event.name, {}))
        content: list[Any] = []
        terminal = self._terminals.pop(event.call_id, None)
        if terminal is not None:  # the output is in the terminal; the summary says how it ended
            content += [TerminalToolCallContent(type="terminal", terminal_id=terminal),
                        tool_calls.text_content(event.summary)]
        else:
            if event.ok and name in tool_calls.EDIT_TOOLS:
                paths = tool_calls.touched_paths(self.workspace, name, args)
                content.extend(tool_calls.edit_diffs(self.workspace, paths))
            if event.output:
                content.append(tool_calls.text_content(event.output))
            elif not event.ok or not content:
                content.append(tool_calls.text_content(event.summary))
        self.send(ToolCallProgress(
            session_update="tool_call_update", tool_call_id=event.call_id,
            status="completed" if event.ok else "failed", content=content))

    async def confirm(self, request: ApprovalRequest) -> ApprovalAnswer:
        """A call the permission policy says to ask about (a command without the sandbox, a
        tool set to ``ask``): the client's permission dialog."""
        call_id = f"approval-{id(request)}"
        options = [
            PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
            PermissionOption(option_id="allow_session",
                             name=f"Allow for this session ({request.session_scope})",
                             kind="allow_always"),
            PermissionOption(option_id="deny", name="Deny", kind="reject_once"),
        ]
        await self.drain_soft()
        response = await self._conn.request_permission(
            session_id=self.session_id, options=options,
            tool_call=ToolCallUpdate(
                tool_call_id=call_id, title=request.title, kind=tool_calls.kind_of(request.tool),
                status="pending", raw_input=dict(request.args),
                content=[tool_calls.text_content(request.reason)]))
        outcome = response.outcome
        if isinstance(outcome, AllowedOutcome) and outcome.option_id in ("allow_once",
                                                                          "allow_session"):
            return "allow_once" if outcome.option_id == "allow_once" else "allow_session"
        return "deny"

    async def ask(self, question: str, options: list[str]) -> str | None:
        """``ask_user``: the question as a permission request whose options are the answers."""
        await self.drain_soft()
        response = await self._conn.request_permission(
            session_id=self.session_id,
            options=[PermissionOption(option_id=str(i), name=o, kind="allow_once")
                     for i, o in enumerate(options)],
            tool_call=ToolCallUpdate(tool_call_id=f"question-{id(question)}", title=question,
                                     kind="think", status="pending"))
        outcome = response.outcome
        if isinstance(outcome, AllowedOutcome) and outcome.option_id.isdigit():
            index = int(outcome.option_id)
            if 0 <= index < len(options):
                return options[index]
        return None

    async def drain_soft(self) -> None:
        """Let the queued updates go out before a request (the dialog shows after them)."""
        while not self._queue.empty() and not self._sender.done():
            await asyncio.sleep(0)


def plan_update(steps: Sequence[tuple[str, str]]) -> AgentPlanUpdate:
    return AgentPlanUpdate(session_update="plan", entries=[
        PlanEntry(content=step, priority="medium", status=status)
        for step, status in steps])


def client_reader(conn: Client, session_id: str) -> Callable[[Path], str | None]:
    """``Workspace.buffer_source`` over ``fs/read_text_file``: the editor's text of a file,
    unsaved changes included. Called from the tools' threads; the request goes through the
    event loop. A client that fails or is slow to answer: None, and the file is read from
    disk."""
    loop = asyncio.get_running_loop()

    def read(path: Path) -> str | None:
        future = asyncio.run_coroutine_threadsafe(
            conn.read_text_file(session_id=session_id, path=str(path)), loop)
        try:
            return future.result(timeout=READ_TIMEOUT_S).content
        except Exception as exc:
            future.cancel()
            log.warning("the client did not give %s (%s); reading it from disk", path, exc)
            return None

    return read
