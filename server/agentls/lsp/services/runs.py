"""Running the agent for the editor: one turn from request to delivered edit.

Chat, commands and code actions all go through ``RunManager.run`` (``ls.runs.run``), with
the engine host the caller awaited (once per request):

1. the session (given, or a new one) and a run id; ``$/progress`` starts;
2. the session's queue: one turn at a time per session, in arrival order, at most
   ``lsp.chat_queue_limit`` waiting (beyond: refused, with when to retry);
3. for chat requests, the client's rate limit (``lsp.chat_requests_per_minute``);
4. the engine runs with the editor's buffers as overlay (it reads the notes the last turn's
   review left, engine/notes.py);
5. the ChangeSet goes to the editor as one ``workspace/applyEdit`` (lsp/services/delivery.py), and a
   change that did not land is offered again (lsp/services/retry_offer.py);
6. the ``done`` chat event, last.

The edit of one turn is settled before the session's next turn starts, so the next turn
reads the files as the person left them. A run is cancelled by ``cancel(run_id)`` (from
``agentls/cancel`` or the progress token) or by cancelling the awaiting task
(``$/cancelRequest``); either way no edit is sent, unless it was already out, and the model
is told on the next turn that its changes were dropped.

The manager gets what it needs from a ``RunContext`` built by the composition root (a
workspace factory, the first root for the cross-process lock, a task spawner, and the editor
connection it hands to the frontend, progress and delivery); it calls nothing back up.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentls.engine.sessions.queue import SessionBusy, SessionQueue
from agentls.lsp.services.protocol import (
    INVALID_PARAMS,
    ErrorPayload,
)
from agentls.lsp.services.rate_limit import ChatRateLimiter, RateLimitFull
from agentls.lsp.services.turn import Turn, TurnRefused, TurnRequest

if TYPE_CHECKING:
    from agentls.engine.host import EngineHost
    from agentls.lsp.services.frontend import LspFrontend
    from agentls.lsp.services.resolved_settings import LspSettings
    from agentls.lsp.services.server_context import ServerContext
    from agentls.workspace.fence import Workspace

log = logging.getLogger(__name__)

# What a run imports inside the methods below (not at the top: the server's start-up stays
# light); the server imports them in its start-up work, so a first chat does not
# (lsp/server.py ``warm_up``; a test keeps this list whole).
RUN_IMPORTS = ("agentls.lsp.services.frontend", "agentls.lsp.services.work_done",
               "agentls.lsp.services.delivery", "agentls.lsp.services.retry_offer",
               "agentls.engine.sessions.lock")


@dataclass(frozen=True)
class RunContext:
    """What a run needs from the server, given once (lsp/server.py builds it)."""

    editor: ServerContext  # the connection: chat events, progress, workspace/applyEdit; only
    # handed on to the frontend, progress and delivery, never called by the manager itself
    new_workspace: Callable[[], Workspace]  # a run's fenced Workspace, fed the open buffers
    root: Callable[[], Path | None]  # the first workspace folder (the session lock's home)
    spawn: Callable[[Coroutine[Any, Any, Any]], asyncio.Task[Any]]  # a kept background task


@dataclass
class _Active:
    turn: Turn  # filled in as the run goes, so a cancelled one still says what it did
    host: EngineHost  # the engine running it
    phase: Literal["waiting", "running", "delivering"] = "waiting"  # delivering: edit is out
    task: asyncio.Task[Turn] | None = field(default=None, repr=False)


class RunManager:
    def __init__(self, context: RunContext, settings: LspSettings) -> None:
        self._context = context
        self.queue_limit = settings.chat_queue_limit  # on the engine's one queue per session
        self.rate = ChatRateLimiter(settings.chat_requests_per_minute,
                                    max_waiting=settings.chat_queue_limit)
        self._active: dict[str, _Active] = {}
        self.requested = 0  # runs asked for since the server started

    def configure(self, settings: LspSettings) -> None:
        self.queue_limit = settings.chat_queue_limit
        self.rate.per_minute = settings.chat_requests_per_minute
        self.rate.max_waiting = settings.chat_queue_limit

    def running(self) -> list[str]:
        return list(self._active)

    def cancel_all(self) -> list[asyncio.Task[Turn]]:
        """Stop every run, waiting or running; returns their tasks to await."""
        tasks = []
        for run_id, active in list(self._active.items()):
            if active.task is not None and not active.task.done():
                if not self.cancel(run_id):
                    active.task.cancel()
                tasks.append(active.task)
        return tasks

    def cancel(self, run_id: str) -> bool:
        """Stop a run: the engine stops a running one (its result says ``cancelled``); one
        still waiting, or whose edit is still being checked, is dropped. False when unknown,
        finished, or its edit is already out."""
        active = self._active.get(run_id)
        if active is None or active.task is None or active.task.done():
            return False
        if active.phase == "delivering":
            return False
        if active.phase == "running" and active.host.agent.cancel(run_id):
            return True
        active.task.cancel()
        return True

    def _cancel_quietly(self, run_id: str) -> None:
        self.cancel(run_id)

    async def run(self, request: TurnRequest, host: EngineHost) -> Turn:
        """Run one turn of the agent for the editor on ``host`` (the engine the caller
        awaited). Raises ``TurnRefused`` when it cannot start; a cancelled caller cancels
        the run."""
        from agentls.lsp.services.frontend import LspFrontend
        from agentls.lsp.services.work_done import RunProgress

        self.requested += 1
        editor = self._context.editor
        session_id = self._session(host, request)
        run_id = request.run_id or host.agent.new_run_id()
        progress = RunProgress(editor, request.progress_title,
                               lambda: self._cancel_quietly(run_id), request.work_done_token)
        frontend = LspFrontend(editor, session_id, run_id, progress=progress,
                               interactive=request.interactive)
        active = _Active(Turn(session_id, run_id), host)
        self._active[run_id] = active
        try:
            await progress.start(_excerpt(request.run.prompt))
            active.task = asyncio.create_task(self._turn(host, request, frontend, active),
                                              name=f"agentls-turn-{run_id}")
            return await active.task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # our caller was cancelled ($/cancelRequest): the turn has stopped too
            return active.turn  # cancel() dropped it while it waited or before its edit
        finally:
            progress.end("stopped")
            del self._active[run_id]
            if not self._active:
                self._context.spawn(host.close_retired())

    def _session(self, host: EngineHost, request: TurnRequest) -> str:
        from agentls.engine.sessions.store import SessionNotFound, title_from

        if request.session_id is not None:
            if host.store.get_session(request.session_id) is None:
                raise TurnRefused(str(SessionNotFound(request.session_id)), code=INVALID_PARAMS)
            return request.session_id
        settings = host.agent.settings
        return host.store.create_session(
            backend=settings.backend, model=settings.active_backend.model, mode=request.mode,
            title=request.title or title_from(request.run.prompt)).id

    async def _turn(self, host: EngineHost, request: TurnRequest, frontend: LspFrontend,
                    active: _Active) -> Turn:
        session_id = frontend.session_id
        turn = active.turn
        refused = False
        # The engine's queue: one per session for every front door; the editor holds the
        # session's turn through the delivery of the edit, so the next turn reads the files
        # as the person left them (Agent.run(session_held=True) does not queue again).
        queue = host.agent.queue
        queue.limit = self.queue_limit
        try:
            ahead = queue.waiting(session_id) + queue.busy(session_id)
            if ahead and queue.waiting(session_id) >= queue.limit:
                refused = True
                raise self._busy(session_id, queue)
            if ahead:
                frontend.status(f"waiting for {ahead} earlier request{_s(ahead)} on this "
                                "session", waiting=ahead)
            try:
                async with queue.turn(session_id), self._process_lock(session_id, frontend):
                    await self._run_in_turn(host, request, frontend, active)
            except SessionBusy:
                refused = True
                raise self._busy(session_id, queue) from None
            except RateLimitFull as exc:
                refused = True
                raise TurnRefused(
                    f"AgentLS: {exc}. The limit is agentls.lsp.chat_requests_per_minute = "
                    f"{self.rate.per_minute}.", data={"retryAfter": math.ceil(exc.retry_after)}
                ) from None
            return turn
        finally:
            if not refused:
                frontend.finish(turn.stop_reason, turn.text, applied=turn.applied,
                                **_failure(turn))

    async def _run_in_turn(self, host: EngineHost, request: TurnRequest,
                           frontend: LspFrontend, active: _Active) -> None:
        """Run the engine and deliver its edit, filling in ``active.turn`` as it goes."""
        from agentls.engine import review_notes as notes
        from agentls.llm.backend import BackendError
        from agentls.lsp.services import delivery
        from agentls.lsp.services.retry_offer import offer_retry

        session_id, run_id = frontend.session_id, frontend.run_id
        turn = active.turn
        if request.rate_limited:
            await self.rate.admit(lambda delay: frontend.status(
                f"{self.rate.per_minute} chat requests per minute reached (setting "
                f"agentls.lsp.chat_requests_per_minute); this one starts in "
                f"{math.ceil(delay)} s", retryAfter=math.ceil(delay)))
        workspace = self._context.new_workspace()
        active.phase = "running"
        try:
            result = await host.agent.run(session_id, request.run, frontend, workspace,
                                          run_id=run_id, session_held=True)
        except BackendError as exc:  # the session's backend could not even be set up
            error = _error_payload(host, session_id, str(exc), exc.kind, exc.hint)
            frontend.error(error["message"], exc.kind, error.get("hint", ""))
            turn.stop_reason, turn.error = "error", error
            return
        except asyncio.CancelledError:
            if not workspace.changeset.is_empty():
                notes.record_withdrawn(host.store, session_id)
            raise
        turn.stop_reason, turn.text = result.stop_reason, result.text
        turn.result, turn.workspace = result, workspace
        if result.stop_reason in ("error", "timeout"):
            kind = result.error.kind if result.error is not None else result.stop_reason
            hint = (result.error.hint if result.error is not None
                    else "raise timeout_ms or split the task")
            turn.error = _error_payload(host, session_id, result.error_message, kind, hint)
        if not result.send_changes:
            if not result.changeset.is_empty():
                notes.record_withdrawn(host.store, session_id)
        elif request.send_edit and result.diffs:
            outgoing = delivery.Outgoing(session_id, result.changeset, result.actions_message_id,
                                         workspace.display_path)
            try:
                turn.delivery = await delivery.deliver(
                    self._context.editor, host.store, outgoing, report=frontend,
                    on_send=lambda: setattr(active, "phase", "delivering"))
            except asyncio.CancelledError:
                if active.phase != "delivering":  # stopped before the edit went out
                    turn.stop_reason = "cancelled"
                    notes.record_withdrawn(host.store, session_id, result.actions_message_id)
                raise
            if turn.delivery.retryable and turn.delivery.message:
                again = dataclasses.replace(request, session_id=session_id,
                                            work_done_token=None)
                offer_retry(self._context.editor, turn.delivery.message,
                            lambda: self.run(again, host))

    @asynccontextmanager
    async def _process_lock(self, session_id: str, frontend: LspFrontend) -> AsyncIterator[None]:
        """One run per session across processes: an `agentls run --session S` in a terminal
        and the editor take turns (engine/sessions/lock.py); the editor's request waits."""
        from agentls.engine.sessions.lock import SessionLock

        root = self._context.root()
        if root is None:
            yield
            return
        lock = await SessionLock.acquire_async(root, session_id,
                                               lambda message: frontend.status(message))
        try:
            yield
        finally:
            lock.release()

    def _busy(self, session_id: str, queue: SessionQueue) -> TurnRefused:
        retry = math.ceil(self.rate.retry_after()) if self.rate.delay() > 0 else None
        when = (f"retry in about {retry} s" if retry
                else "retry once the running request has finished")
        return TurnRefused(
            f"AgentLS: session {session_id} already has {queue.waiting(session_id)} chat "
            f"requests waiting (agentls.lsp.chat_queue_limit = {queue.limit}); {when}, "
            "or start a new session.", data={"retryAfter": retry})


def _error_payload(host: EngineHost, session_id: str, message: str, kind: str,
                   hint: str) -> ErrorPayload:
    if kind in ("connection", "timeout", "model_not_found"):
        session = host.store.get_session(session_id)
        name = session.backend if session is not None else host.agent.settings.backend
        backend = host.agent.settings.backends.get(name)
        if backend is not None:
            hint += (f" (backend {name!r}: base_url {backend.base_url}, model "
                     f"{backend.model}; set them in the AgentLS settings)")
    return {"message": message, "kind": kind, "hint": hint}


def _failure(turn: Turn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if turn.delivery is not None and turn.delivery.failure_reason:
        out["failureReason"] = turn.delivery.failure_reason
    if turn.error is not None:
        out["error"] = dict(turn.error)
    return out


def _excerpt(prompt: str, limit: int = 60) -> str:
    line = " ".join(prompt.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _s(n: int) -> str:
    return "" if n == 1 else "s"
