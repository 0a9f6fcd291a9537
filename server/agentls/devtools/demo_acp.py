"""`make demo-acp`: an ACP session end to end, with a SCRIPTED model (not a real one).

The official Python ACP SDK's client side starts `agentls acp` as an editor would, opens a
session on a sample project, sends a prompt and prints every session/update as it arrives;
the review's permission request is answered "apply all", and the files are written through
the client's fs/write_text_file, as in Zed. The client offers a terminal: the sandboxed
command runs there (the command line AgentLS hands over is printed), and the model's plan
shows as a checklist. The model is the scripted server
(agentls.devtools.replay) answering from devtools/scripts/demo_acp.yaml.
"""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
from pathlib import Path
from typing import Any, cast

from acp.interfaces import Client
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    FileSystemCapabilities,
    KillTerminalResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from rich.console import Console
from rich.markup import escape

import acp
from agentls.base.python_child import agentls_argv
from agentls.devtools.replay.command import ReplayServer

SCRIPT = Path(__file__).resolve().parent / "scripts" / "demo_acp.yaml"
console = Console(highlight=False)


class PrintingClient:
    """What an editor does, printed: updates shown, the review allowed, files written."""

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        kind = update.session_update
        if kind == "agent_message_chunk":
            console.print(update.content.text, end="", style="cyan")
        elif kind == "agent_thought_chunk":
            console.print(f"\n  [dim]{update.content.text.strip()}[/dim]")
        elif kind == "tool_call":
            console.print(f"\n  [yellow]tool_call[/yellow] {update.kind}: {update.title}"
                          f" ({update.status})")
        elif kind == "tool_call_update":
            for block in update.content or []:
                if block.type == "diff":
                    console.print(f"  [green]diff[/green] {Path(block.path).name}: "
                                  f"{(block.old_text or '').strip()!r} -> "
                                  f"{block.new_text.strip()!r}")
                elif block.type == "terminal":
                    console.print(f"  [green]terminal[/green] {block.terminal_id} shown live")
                elif block.type == "content":
                    console.print(f"  [dim]{block.content.text.strip()[:200]}[/dim]")
            console.print(f"  [yellow]tool_call_update[/yellow] {update.tool_call_id}: "
                          f"{update.status}")
        elif kind == "plan":
            marks = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
            console.print("\n  [magenta]plan[/magenta]")
            for entry in update.entries:
                console.print(escape(f"    {marks.get(entry.status, '[ ]')} {entry.content}"))
        elif kind == "available_commands_update":
            names = ", ".join(f"/{c.name}" for c in update.available_commands)
            console.print(f"  [dim]slash commands offered: {names}[/dim]")

    def __init__(self) -> None:
        self.terminals: dict[str, asyncio.subprocess.Process] = {}

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None,
                              cwd: str | None = None, **_: Any) -> CreateTerminalResponse:
        argv = [command, *(args or [])]
        wrapped = "bwrap" if any(a.endswith("bwrap") for a in argv) else "(no bwrap!)"
        console.print(f"\n  [bold]terminal/create[/bold] "
                      f"{escape(f'{argv[0]} ... {wrapped} ... -- ' + ' '.join(argv[-3:]))}")
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL, start_new_session=True)
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = process
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str,
                                     **_: Any) -> WaitForTerminalExitResponse:
        code = await self.terminals[terminal_id].wait()
        return WaitForTerminalExitResponse(exit_code=code if code >= 0 else None)

    async def terminal_output(self, session_id: str, terminal_id: str,
                              **_: Any) -> TerminalOutputResponse:
        process = self.terminals[terminal_id]
        assert process.stdout is not None
        output = (await process.stdout.read()).decode(errors="replace")
        console.print(f"  [dim]terminal output: {escape(output.strip())}[/dim]")
        code = process.returncode
        status = None if code is None else TerminalExitStatus(exit_code=max(code, 0))
        return TerminalOutputResponse(output=output, truncated=False, exit_status=status)

    async def kill_terminal(self, session_id: str, terminal_id: str,
                            **_: Any) -> KillTerminalResponse:
        process = self.terminals[terminal_id]
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGKILL)
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str,
                               **_: Any) -> ReleaseTerminalResponse:
        await self.kill_terminal(session_id, terminal_id)
        return ReleaseTerminalResponse()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **_: Any) -> RequestPermissionResponse:
        console.print(f"\n[bold]session/request_permission[/bold]: {tool_call.title}")
        for option in options:
            console.print(f"  option {option.option_id}: {option.name}")
        console.print("  -> the demo answers [bold]apply_all[/bold]")
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected",
                                                                option_id="apply_all"))

    async def write_text_file(self, session_id: str, path: str, content: str,
                              **_: Any) -> WriteTextFileResponse:
        console.print(f"  [bold]fs/write_text_file[/bold] {Path(path).name}")
        Path(path).write_text(content)
        return WriteTextFileResponse()


async def run_demo(project: Path, env: dict[str, str]) -> None:
    client = PrintingClient()
    async with acp.spawn_agent_process(cast(Client, client), *agentls_argv("acp"),
                                       env=env, cwd=str(project)) as (conn, _):
        init = await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=False, write_text_file=True),
                terminal=True))
        console.print(f"initialize: protocol {init.protocol_version}, agent "
                      f"{init.agent_info.title if init.agent_info else '?'}")
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        console.print(f"session/new: {session.session_id} (modes: "
                      f"{', '.join(m.id for m in session.modes.available_modes)})"
                      if session.modes else f"session/new: {session.session_id}")
        console.print("\n[bold]session/prompt[/bold]: fix add and double\n")
        answer = await conn.prompt(session_id=session.session_id,
                                   prompt=[acp.text_block("fix add and double")])
        console.print(f"\n\nstop reason: [bold]{answer.stop_reason}[/bold]")


def main() -> int:
    console.rule("[bold]AgentLS over ACP, with a SCRIPTED model (not a real one)[/bold]")
    with tempfile.TemporaryDirectory(prefix="agentls-acp-demo-") as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        (project / "util.py").write_text("def double(x):\n    return x + x\n")
        with ReplayServer(SCRIPT) as server:
            env = {**os.environ,
                   "AGENTLS_BACKENDS__SCRIPTED__BASE_URL": server.base_url,
                   "AGENTLS_BACKENDS__SCRIPTED__MODEL": "scripted-model",
                   "AGENTLS_BACKENDS__SCRIPTED__API_KEY_ENV": "AGENTLS_DEMO_KEY",
                   "AGENTLS_BACKEND": "scripted", "AGENTLS_CACHE__ENABLED": "false",
                   "AGENTLS_DEMO_KEY": "scripted-demo-key"}
            asyncio.run(run_demo(project, env))
        console.print("\ncalc.py now:", (project / "calc.py").read_text().strip())
        console.print("util.py now:", (project / "util.py").read_text().strip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
