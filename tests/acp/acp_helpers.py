"""Driving `agentls acp` as a real process with the SDK's own client side (``acp``), against
the scripted model server (not a real model)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    SessionNotification,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

import acp
from agentls.devtools.replay.command import ReplayServer

SECRET = "sk-acp-planted-secret-0123456789"


def scripted_env(server: ReplayServer, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "AGENTLS_BACKENDS__SCRIPTED__BASE_URL": server.base_url,
        "AGENTLS_BACKENDS__SCRIPTED__MODEL": "scripted-model",
        "AGENTLS_BACKENDS__SCRIPTED__API_KEY_ENV": "SCRIPTED_KEY",
        "AGENTLS_BACKENDS__OTHER__BASE_URL": server.base_url,
        "AGENTLS_BACKENDS__OTHER__MODEL": "other-model",
        "AGENTLS_BACKENDS__OTHER__API_KEY_ENV": "SCRIPTED_KEY",
        "AGENTLS_BACKEND": "scripted",
        "AGENTLS_RETRY__BASE_DELAY_S": "0.01",
        "AGENTLS_RETRY__MAX_RETRIES": "0",
        "AGENTLS_CACHE__ENABLED": "false",
        "SCRIPTED_KEY": SECRET,
        **extra,
    }


def make_project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "src" / "util.py").write_text("def double(x):\n    return x + x\n")
    (root / "README.md").write_text("# calc\n")
    return root


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def read_edit_run_steps() -> list[dict[str, Any]]:
    """Read calc.py, edit calc.py and util.py, run a command in the sandbox, answer."""
    return [
        {"match": {"tool_results": False}, "reply": {"text": "I am a scripted model. Reading.",
                                                     "tool_calls": [
            call("read_file", "c1", path="src/calc.py")]}},
        {"match": {"tool": "read_file"}, "reply": {"text": "Editing both files.", "tool_calls": [
            call("edit_file", "c2", path="src/calc.py",
                 edits=[{"search": "return a - b", "replace": "return a + b"}]),
            call("edit_file", "c3", path="src/util.py",
                 edits=[{"search": "return x + x", "replace": "return 2 * x"}])]}},
        {"match": {"tool": "edit_file"}, "reply": {"tool_calls": [
            call("shell_exec", "c4", command="grep -c 'a + b' src/calc.py")]}},
        {"match": {"tool": "shell_exec"}, "reply": {"text": "Fixed add() and double()."}},
    ]


class Terminal:
    """A terminal of the test client: the given command really runs (its own process group),
    stdout and stderr together, the oldest bytes dropped past the byte limit, as ACP says."""

    def __init__(self, argv: list[str], cwd: str | None, env: dict[str, str] | None,
                 limit: int | None) -> None:
        self.argv, self.cwd, self.env, self.limit = argv, cwd, env, limit
        self.output = bytearray()
        self.truncated = False
        self.killed = False
        self.released = False
        self.process: asyncio.subprocess.Process | None = None
        self.reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            *self.argv, cwd=self.cwd, env={**os.environ, **(self.env or {})},
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        while chunk := await self.process.stdout.read(65536):
            self.output += chunk
            if self.limit is not None and len(self.output) > self.limit:
                del self.output[:len(self.output) - self.limit]
                self.truncated = True

    async def wait(self) -> TerminalExitStatus:
        assert self.process is not None and self.reader is not None
        code = await self.process.wait()
        await self.reader
        if code < 0:
            return TerminalExitStatus(signal=signal.Signals(-code).name)
        return TerminalExitStatus(exit_code=code)

    def kill(self) -> None:
        assert self.process is not None
        if self.process.returncode is None:
            self.killed = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)


class RecordingClient:
    """An ACP client that records every update and answers permission requests as told."""

    def __init__(self, *, permission: str | None = "apply_all", fs_write: bool = True,
                 fail_write_on: str | None = None,
                 buffers: dict[str, str] | None = None, terminal: bool = False,
                 terminal_fails: bool = False) -> None:
        self.updates: list[SessionNotification] = []
        self.permissions: list[Any] = []
        self.writes: list[tuple[str, str]] = []
        self.permission = permission  # an option id, "cancel", or None: never answer
        self.fs_write = fs_write
        self.fail_write_on = fail_write_on
        self.buffers = buffers  # path -> unsaved text; None: no fs/read_text_file offered
        self.reads: list[str] = []
        self.asked = asyncio.Event()
        self.first_update = asyncio.Event()
        self.terminal = terminal  # offer the terminal capability, with real processes
        self.terminal_fails = terminal_fails  # offered, but terminal/create answers an error
        self.terminals: dict[str, Terminal] = {}
        self.terminal_started = asyncio.Event()
        self._terminal_ids = itertools.count(1)

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=self.buffers is not None,
                                                            write_text_file=self.fs_write),
                                  terminal=self.terminal)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **_: Any) -> RequestPermissionResponse:
        self.permissions.append((tool_call, options))
        self.asked.set()
        if self.permission is None:
            await asyncio.Event().wait()  # never answers
        if self.permission == "cancel":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        ids = [o.option_id for o in options]
        chosen = self.permission if self.permission in ids else ids[0]
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected",
                                                                option_id=chosen))

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(SessionNotification(session_id=session_id, update=update))
        self.first_update.set()

    async def write_text_file(self, session_id: str, path: str, content: str,
                              **_: Any) -> WriteTextFileResponse:
        if self.fail_write_on and path.endswith(self.fail_write_on):
            raise acp.RequestError.internal_error({"message": "disk full (test)"})
        self.writes.append((path, content))
        Path(path).write_text(content)
        return WriteTextFileResponse()

    async def read_text_file(self, session_id: str, path: str, **_: Any) -> Any:
        if self.buffers is None:
            raise acp.RequestError.method_not_found("fs/read_text_file")
        self.reads.append(path)
        text = self.buffers.get(path)
        return ReadTextFileResponse(content=text if text is not None else Path(path).read_text())

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None,
                              env: list[Any] | None = None, cwd: str | None = None,
                              output_byte_limit: int | None = None,
                              **_: Any) -> CreateTerminalResponse:
        if not self.terminal:
            raise acp.RequestError.method_not_found("terminal/create")
        if self.terminal_fails:
            raise acp.RequestError.internal_error({"message": "no terminal here (test)"})
        terminal = Terminal([command, *(args or [])], cwd,
                            {v.name: v.value for v in env or []}, output_byte_limit)
        await terminal.start()
        terminal_id = f"term-{next(self._terminal_ids)}"
        self.terminals[terminal_id] = terminal
        self.terminal_started.set()
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str,
                                     **_: Any) -> WaitForTerminalExitResponse:
        status = await self.terminals[terminal_id].wait()
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def terminal_output(self, session_id: str, terminal_id: str,
                              **_: Any) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        assert terminal.process is not None
        status = await terminal.wait() if terminal.process.returncode is not None else None
        return TerminalOutputResponse(output=terminal.output.decode(errors="replace"),
                                      truncated=terminal.truncated, exit_status=status)

    async def kill_terminal(self, session_id: str, terminal_id: str,
                            **_: Any) -> KillTerminalResponse:
        self.terminals[terminal_id].kill()
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str,
                               **_: Any) -> ReleaseTerminalResponse:
        terminal = self.terminals[terminal_id]
        terminal.kill()
        terminal.released = True
        return ReleaseTerminalResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def of(self, kind: str) -> list[Any]:
        return [n.update for n in self.updates if n.update.session_update == kind]

    def text(self) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk"))


@contextlib.asynccontextmanager
async def spawned(client: RecordingClient, env: dict[str, str],
                  cwd: Path) -> AsyncIterator[tuple[Any, asyncio.subprocess.Process]]:
    async with acp.spawn_agent_process(client, sys.executable, "-P", "-m", "agentls", "acp",
                                       env=env, cwd=str(cwd)) as (conn, process):
        yield conn, process


async def initialized(conn: Any, client: RecordingClient) -> Any:
    return await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                 client_capabilities=client.capabilities())


async def cancelled_once(server: ReplayServer, project: Path, client: RecordingClient,
                         prompt: str, ready: asyncio.Event, answer_within: float) -> Any:
    """A turn on a new session, cancelled once ``ready`` is set (at most 30 s in): the
    prompt's answer, which must come within ``answer_within`` seconds of the cancel."""
    async with spawned(client, scripted_env(server), project) as (conn, _):
        await initialized(conn, client)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        turn = asyncio.create_task(conn.prompt(session_id=session.session_id,
                                               prompt=[acp.text_block(prompt)]))
        await asyncio.wait_for(ready.wait(), 30)
        await conn.cancel(session_id=session.session_id)
        return await asyncio.wait_for(turn, answer_within)
