"""Sandboxed commands in the client's terminal (``terminal/create`` and friends), so the
editor shows them live.

The engine builds the command line exactly as it would run it itself (bubblewrap over the
shadow workspace, the memory limit in the argv: tools/shell/sandboxed.py) and hands it
here through ``Frontend.command_runner``; the client only starts that argv. The timeout is
the engine's (then ``terminal/kill``), the output is cut to the engine's limits, and a
cancelled run kills the command. A client whose terminal fails is not asked again this
turn: the engine runs its commands itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agentls.engine.command_runner import ExternalRun
from agentls.engine.events import TOOL_CALL_ID

if TYPE_CHECKING:
    from acp.interfaces import Client

    from agentls.engine.command_runner import Launch

log = logging.getLogger(__name__)

CLEANUP_TIMEOUT_S = 5.0  # kill / release / output after the end: a silent client is not waited for
BYTES_PER_CHAR = 4  # UTF-8's worst case: the client's byte limit keeps as many characters


class ClientTerminal:
    """An ``engine.command_runner.CommandRunner`` over the ACP client's terminal methods.
    ``shown(call_id, terminal_id)`` puts the terminal into that tool call's content."""

    def __init__(self, conn: Client, session_id: str,
                 shown: Callable[[str, str], None]) -> None:
        self._conn = conn
        self._session_id = session_id
        self._shown = shown
        self.failed = False

    async def __call__(self, launch: Launch, timeout: float,
                       output_limit: int) -> ExternalRun | None:
        if self.failed:
            return None
        byte_limit = BYTES_PER_CHAR * 2 * output_limit if output_limit > 0 else None
        try:
            created = await self._conn.create_terminal(
                session_id=self._session_id, command=launch.argv[0], args=launch.argv[1:],
                cwd=str(launch.cwd), output_byte_limit=byte_limit)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # no terminal after all: the engine runs it itself
            log.warning("the client's terminal/create failed (%s); running commands here", exc)
            self.failed = True
            return None
        terminal_id = created.terminal_id
        call_id = TOOL_CALL_ID.get()
        if call_id is not None:
            self._shown(call_id, terminal_id)
        try:
            return await self._run(terminal_id, timeout)
        except asyncio.CancelledError:  # the run was cancelled: the command stops with it
            await self._quietly("terminal/kill", self._conn.kill_terminal(
                session_id=self._session_id, terminal_id=terminal_id))
            raise
        finally:
            await self._quietly("terminal/release", self._conn.release_terminal(
                session_id=self._session_id, terminal_id=terminal_id))

    async def _run(self, terminal_id: str, timeout: float) -> ExternalRun:
        ids = {"session_id": self._session_id, "terminal_id": terminal_id}
        timed_out = False
        try:
            async with asyncio.timeout(timeout):
                await self._conn.wait_for_terminal_exit(**ids)
        except TimeoutError:
            timed_out = True
            await self._quietly("terminal/kill", self._conn.kill_terminal(**ids))
            await self._quietly("terminal/wait_for_exit", self._conn.wait_for_terminal_exit(**ids))
        try:
            async with asyncio.timeout(CLEANUP_TIMEOUT_S):
                output = await self._conn.terminal_output(**ids)
        except Exception as exc:  # the command ran; only its output is missing: say so
            log.warning("the client's terminal/output failed: %s", exc)
            return ExternalRun(None, None, "", timed_out, [
                f"the editor's terminal did not give the output ({exc}); it is shown there"])
        status = output.exit_status
        notes = []
        if output.truncated:
            notes.append("the beginning of the output was cut (the editor's terminal keeps the "
                         "last part)")
        return ExternalRun(status.exit_code if status is not None else None,
                           status.signal if status is not None else None,
                           output.output, timed_out, notes)

    async def _quietly(self, what: str, request: Awaitable[Any]) -> None:
        """A clean-up request: bounded, and a failure is logged, not raised."""
        try:
            async with asyncio.timeout(CLEANUP_TIMEOUT_S):
                await request
        except Exception as exc:
            log.warning("the client's %s failed: %s", what, exc)
