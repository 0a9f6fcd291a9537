"""What the two as-you-type model paths (inline completion, next edit) share: the FIM client a
settings section asks for, a status told only when it changes, and one slot per document that
keeps at most one model request in flight (a new request cancels the one before it at once,
pauses, waits for it to be gone, then asks; a newer keystroke in between takes over).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

if TYPE_CHECKING:
    from agentls.llm.fim import FimClient
    from agentls.settings.models import CompletionConfig, NextEditConfig, Settings

Status = Literal["idle", "waiting", "off", "error"]
T = TypeVar("T")
PREVIOUS_GONE_S = 1.0  # how long a request waits for the one before it to close


def fim_client_for(settings: Settings, wanted: CompletionConfig | NextEditConfig
                   ) -> tuple[FimClient | None, str]:
    """The FIM client and the model a section (``completion``, ``next_edit``) asks for: the
    backend it names, else the active one, and that backend's model unless it names one.
    (None, "") when the section is off."""
    if not wanted.active:
        return None, ""
    from agentls.llm.fim import FimClient
    from agentls.settings.config import api_key

    name = wanted.backend or settings.backend
    backend = settings.backends[name]
    return (FimClient(name, backend.base_url, api_key(backend), wanted.timeout_s),
            wanted.model or backend.model)


class StatusTeller:
    """A status (idle, waiting, off, error) told to the front door only when it changes; the
    first one always."""

    def __init__(self, on_status: Callable[[Status, str], None] | None) -> None:
        self.status: Status = "off"
        self._announced = False
        self._on_status = on_status

    def _set_status(self, status: Status, message: str) -> None:
        if status == self.status and self._announced:
            return
        self.status, self._announced = status, True
        if self._on_status is not None:
            self._on_status(status, message)

    def _waiting(self) -> None:
        if self.status != "error":  # a server that is down shows one status, not a flicker
            self._set_status("waiting", "")


@dataclass
class Slot(Generic[T]):
    """One document's model request: its generation counts the requests asked for."""

    generation: int = 0
    task: asyncio.Task[T] | None = None

    def supersede(self) -> tuple[int, asyncio.Task[T] | None, bool]:
        """A new request: its generation, the request before it, and whether that one was
        still running (it is cancelled first: its stream closes now)."""
        self.generation += 1
        previous = self.task
        running = previous is not None and not previous.done()
        if previous is not None and running:
            previous.cancel()
        return self.generation, previous, running

    async def settle(self, generation: int, previous: asyncio.Task[T] | None,
                     pause_s: float) -> bool:
        """Pause (the debounce), then wait for the request before to be gone: False when a
        newer request took over meanwhile (no model call for this one)."""
        if pause_s:
            await asyncio.sleep(pause_s)
            if self.generation != generation:
                return False
        if previous is not None and not previous.done():
            await asyncio.wait([previous], timeout=PREVIOUS_GONE_S)
            if self.generation != generation:
                return False
        return True

    async def run(self, ask: Coroutine[Any, Any, T]) -> tuple[bool, T | None]:
        """Ask, as this slot's request: (True, the answer), or (False, None) when a keystroke
        or a newer request closed it. The caller's own cancellation goes on to the request."""
        task = asyncio.create_task(ask)
        self.task = task
        try:
            return True, await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                task.cancel()
                raise
            return False, None
        finally:
            if self.task is task and task.done():
                self.task = None
