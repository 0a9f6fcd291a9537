"""shell_exec in the sandbox over the shadow workspace (DESIGN.md decision 11).

``ShellSandbox`` lives as long as a session: it knows the sandbox settings, whether a
sandbox can run here, the session's scratch layer, and whether the person has been warned
that commands run unsandboxed. Per command: rebuild the pending layer from the ChangeSet,
run the command under bwrap (``agentls.tools.shell.shell_exec`` does the process handling, or the
``runner`` a front-end gives: the editor's terminal runs the very same argv), then fold its
writes into the ChangeSet. The permission side (``shell_mode``) tells the policy whether
a command is sandboxed, so it can run without asking.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentls.settings.sandbox import SandboxSettings
from agentls.tools.output import fail
from agentls.tools.permission_gate import ShellMode, ShellState

if TYPE_CHECKING:
    # The process handling, the overlay and bwrap's arguments load with the first command
    # (or the first question whether one can be sandboxed): a session is made, and its
    # first model request sent, before any of them is needed (issue 27).
    from agentls.sandbox.bwrap import SandboxStatus
    from agentls.tools.shell.shell_exec import CommandRunner
    from agentls.workspace.fence import Workspace
    from agentls.workspace.overlay import ShadowWorkspace

SANDBOX_HOME = "/tmp/home"
SANDBOX_TMP = "/tmp"
_MEMORY_SIGNS = ("MemoryError", "Cannot allocate memory", "out of memory", "std::bad_alloc")


class ShellSandbox:
    """One session's sandbox: settings, availability, scratch layer, one-time warning."""

    def __init__(
        self,
        settings: SandboxSettings | None = None,
        session_key: str | None = None,
        *,
        notify: Callable[[str], None] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings or SandboxSettings()
        self.session_key = _safe_key(session_key) if session_key else secrets.token_hex(6)
        self.notify = notify
        self._environ = environ
        self._status: SandboxStatus | None = None
        self._shadows: dict[tuple[Path, ...], ShadowWorkspace] = {}
        self._warned = False
        self._lock = asyncio.Lock()  # one overlay mount of the upper layer at a time
        # Who runs a sandboxed command's argv (None: shell_exec itself); set per run.
        self.runner: CommandRunner | None = None

    @property
    def environ(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    def status(self) -> SandboxStatus:
        if self._status is None:
            from agentls.sandbox.bwrap import probe

            self._status = probe(self.environ)
        return self._status

    def mode(self) -> ShellMode:
        """What the permission policy needs to know about the next command."""
        mode = self.settings.mode
        if mode == "off":
            return ShellMode("off", "not sandboxed (sandbox.mode = off): the command runs "
                             "directly on this machine")
        status = self.status()
        if not status.available:
            state: ShellState = "required" if mode == "required" else "unavailable"
            return ShellMode(state, f"not sandboxed ({status.detail}): the command runs "
                             f"directly on this machine")
        network = "network on" if self.settings.network else "no network"
        return ShellMode("sandboxed", f"sandboxed: {network}, writes shown as a diff",
                         ask=self.settings.ask)

    def warning(self) -> str | None:
        """The one-time warning when commands cannot be sandboxed (None once given)."""
        if self._warned or self.settings.mode == "off" or self.status().available:
            return None
        self._warned = True
        status = self.status()
        if self.settings.mode == "required":
            return (f"AgentLS will not run commands: sandbox.mode is 'required' and no sandbox "
                    f"can run here ({status.detail}). Fix: {status.fix}.")
        return (f"AgentLS cannot sandbox commands here ({status.detail}), so it will ask "
                f"before every command. Fix: {status.fix}.")

    async def run(
        self,
        ws: Workspace,
        command: str,
        cwd: str | None,
        timeout: float,
        *,
        api_key_env: str,
        output_limit: int,
    ) -> dict[str, Any]:
        mode = self.mode()
        note = self.warning()
        if note and self.notify is not None:
            self.notify(note)
        if mode.state == "required":
            status = self.status()
            return fail("SANDBOX_UNAVAILABLE", f"Commands cannot run: sandbox.mode is "
                        f"'required' and no sandbox can run here ({status.detail}). Do the "
                        f"task without running commands, or tell the person: {status.fix}.")
        from agentls.tools.shell import shell_exec as shell

        if mode.state != "sandboxed":
            result = await shell.shell_exec(ws, command, cwd, timeout, api_key_env=api_key_env,
                                            output_limit=output_limit)
            # The model was told commands see its pending changes: here they do not.
            result["sandbox"] = f"{mode.note}, on the files on disk: your pending changes " \
                                "are not in them"
            return result
        async with self._lock:
            return await self._run_sandboxed(ws, command, cwd, timeout, api_key_env,
                                             output_limit)

    async def _run_sandboxed(self, ws: Workspace, command: str, cwd: str | None,
                             timeout: float, api_key_env: str, output_limit: int
                             ) -> dict[str, Any]:
        from agentls.sandbox.bwrap import bwrap_argv, home_dirs, sandbox_environment
        from agentls.tools.shell import shell_exec as shell

        shadow = self.shadow(ws)
        await asyncio.to_thread(shadow.materialise)
        status = self.status()
        assert status.bwrap is not None
        settings = self.settings
        env = sandbox_environment(settings, self.environ, SANDBOX_HOME, SANDBOX_TMP,
                                  api_key_env)
        homes = home_dirs(self.environ)

        def launcher(argv: list[str], directory: Path) -> shell.Launch:
            def full(new_session: bool) -> list[str]:
                return memory_limited(bwrap_argv(
                    status.bwrap or "bwrap", settings, shadow.layers, directory, env, argv,
                    hidden_homes=homes, new_session=new_session), settings.memory_mb)

            # In the editor's terminal the command gets a session of its own (--new-session);
            # started here, it already has one with no terminal, and stays in the group that
            # is killed when AgentLS dies.
            return shell.Launch(full(True), dict(env), ws.roots[0], local_argv=full(False))

        result = await shell.shell_exec(ws, command, cwd, timeout, api_key_env=api_key_env,
                                        output_limit=output_limit, launcher=launcher,
                                        runner=self.runner)
        combined = shell.COMBINED_NOTE in result.get("notes", ())  # the editor's terminal
        stderr = str(result.get("stdout" if combined else "stderr") or "")
        if result.get("exit_code") == 1 and stderr.startswith("bwrap:"):
            return fail("SANDBOX_FAILED", f"The sandbox could not start the command "
                        f"({stderr.strip()}). Tell the person; running it again will not help.")
        folded = await asyncio.to_thread(shadow.fold)
        result.update(folded.to_result())
        result["sandbox"] = self.mode().note
        if result.get("exit_code") not in (0, None) and any(
                sign in stderr for sign in _MEMORY_SIGNS):
            result.setdefault("notes", []).append(
                f"the command may have hit the sandbox memory limit ({settings.memory_mb} "
                f"MiB, sandbox.memory_mb)")
        return result

    def shadow(self, ws: Workspace) -> ShadowWorkspace:
        shadow = self._shadows.get(ws.roots)
        if shadow is None or shadow.ws is not ws:
            from agentls.workspace.overlay import ShadowWorkspace

            shadow = self._shadows[ws.roots] = ShadowWorkspace(ws, self.session_key)
        return shadow


def memory_limited(argv: list[str], memory_mb: int) -> list[str]:
    """``argv`` under an address-space limit, as a command line anyone can start (the
    editor's terminal too): sh sets the limit, then becomes bwrap."""
    return ["/bin/sh", "-c", f'ulimit -v {memory_mb * 1024} && exec "$@"', "agentls-sandbox",
            *argv]


def _safe_key(key: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_" else "_" for c in key)[:64]
    return cleaned or secrets.token_hex(6)
