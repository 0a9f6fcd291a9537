"""The terminal as the engine's front-end: events to the screen and the transcript, and who
answers approvals.

* ``--yes``: every ``ask`` permission is allowed once (and said so on stderr); questions the
  model asks with ``ask_user`` get no answer, so it decides itself.
* a terminal and no ``--yes``: the person is asked, on stdin, or on ``/dev/tty`` (``CON``
  on Windows) when stdin carried the prompt.
* neither: the run is non-interactive and ``ask`` permissions are denied (automation mode).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from agentls.cli.render import Renderer
from agentls.engine.events import Event, ReasoningDelta
from agentls.tools.permission_gate import ApprovalAnswer, ApprovalRequest

if TYPE_CHECKING:  # rich is imported where a terminal is there to draw on
    from rich.console import Console

_ANSWERS: dict[str, ApprovalAnswer] = {"y": "allow_once", "s": "allow_session", "n": "deny"}


class TtyPrompt:
    """Questions to the person at the terminal. Reading blocks, so callers use a thread."""

    def __init__(self, stream: TextIO, console: Console, owned: bool) -> None:
        self.stream = stream
        self.console = console
        self._owned = owned

    @classmethod
    def open(cls, *, stdin_used: bool) -> TtyPrompt | None:
        """A prompt on the controlling terminal, or None when there is no one to ask."""
        if not sys.stderr.isatty():
            return None
        from rich.console import Console

        if not stdin_used and sys.stdin.isatty():
            return cls(sys.stdin, Console(file=sys.stderr, highlight=False), owned=False)
        device = "CON" if os.name == "nt" else "/dev/tty"
        try:
            stream = open(device, encoding="utf-8")  # noqa: SIM115 - closed by close()
        except OSError:
            return None
        return cls(stream, Console(file=sys.stderr, highlight=False), owned=True)

    def confirm(self, request: ApprovalRequest) -> ApprovalAnswer:
        from rich.prompt import Prompt
        from rich.text import Text

        self.console.print(Text(request.title, style="bold"))
        self.console.print(Text(f"  why: {request.reason}"))
        self.console.print(Text(f"  [s] allows {request.session_scope}"))
        answer = Prompt.ask(Text("Allow? [y]es once / [s]ession / [n]o"), choices=list(_ANSWERS),
                            default="n", show_choices=False, console=self.console,
                            stream=self.stream)
        return _ANSWERS[answer]

    def choose(self, question: str, options: list[str]) -> str | None:
        from rich.prompt import Prompt
        from rich.text import Text

        self.console.print(Text(question, style="bold"))
        for number, option in enumerate(options, 1):
            self.console.print(Text(f"  {number}. {option}"))
        choices = [str(n) for n in range(1, len(options) + 1)]
        answer = Prompt.ask(Text("Choose a number (empty: let the agent decide)"),
                            choices=[*choices, ""], default="", show_choices=False,
                            console=self.console, stream=self.stream)
        return options[int(answer) - 1] if answer else None

    def close(self) -> None:
        if self._owned:
            with contextlib.suppress(OSError):
                self.stream.close()


class TerminalFrontend:
    """``agentls.engine.events.Frontend`` for ``agentls run`` and ``agentls loop``."""

    def __init__(self, renderer: Renderer, *, yes: bool, prompt: TtyPrompt | None,
                 record: Callable[[Event], None]) -> None:
        self.renderer = renderer
        self.yes = yes
        self.prompt = prompt
        self.interactive = yes or prompt is not None
        self.preapproved = yes  # --yes approves `ask` calls even in an automation session
        self._record = record

    def on_event(self, event: Event) -> None:
        if isinstance(event, ReasoningDelta):  # not part of the transcript or --json events
            return
        self._record(event)
        self.renderer.on_event(event)

    async def confirm(self, request: ApprovalRequest) -> ApprovalAnswer:
        if self.yes:
            self.renderer.line(f"approved by --yes: {request.title}")
            return "allow_once"
        if self.prompt is None:
            return "deny"
        self.renderer.pause()
        return await asyncio.to_thread(self.prompt.confirm, request)

    async def ask(self, question: str, options: list[str]) -> str | None:
        if self.prompt is None:
            return None
        self.renderer.pause()
        return await asyncio.to_thread(self.prompt.choose, question, options)
