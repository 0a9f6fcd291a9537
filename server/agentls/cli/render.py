"""What a headless run shows in the terminal.

stdout carries only the assistant's text, streamed as it arrives (or, with ``--json``, only
the final JSON object). Everything else goes to stderr: status, tool activity, retries
(``retry 1/3 in 2.0 s: rate limit``), the diff of a dry run and the closing summary. On a
terminal a spinner shows what the agent is doing; otherwise each status is one plain line.
``--quiet`` keeps stderr to errors.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TextIO, cast

from agentls.cli.report import Report
from agentls.engine.events import (
    Event,
    RetryEvent,
    StatusEvent,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
)
from agentls.policy.redaction import RedactingWriter, redact
from agentls.workspace.changeset import FileDiff

if TYPE_CHECKING:  # rich (~15 ms to import) loads on the first line drawn on stderr: a
    # --quiet or --json run that ends well never draws one
    from rich.console import Console
    from rich.status import Status
    from rich.text import Text

ARGUMENT_PREVIEW = 80
_STATUS_LETTER = {"added": "A", "modified": "M", "deleted": "D", "renamed": "R"}


class Renderer:
    def __init__(self, *, quiet: bool = False, json_mode: bool = False,
                 stdout: TextIO | None = None, stderr: TextIO | None = None,
                 verbose: bool = False) -> None:
        self.quiet = quiet
        self.verbose = verbose  # also the details (which instruction files were loaded)
        self.json_mode = json_mode
        self.out = stdout or sys.stdout
        self._err_stream = cast(TextIO, RedactingWriter(stderr or sys.stderr))
        self._err: Console | None = None
        self._spinner: Status | None = None
        self._text_pending_newline = False  # stdout's last character is not a newline
        self._out_gone = False  # the reader of stdout went away (`agentls run … | head`)

    @property
    def err(self) -> Console:
        """stderr as a rich console, made on first use."""
        if self._err is None:
            from rich.console import Console

            self._err = Console(file=self._err_stream, highlight=False, soft_wrap=True)
        return self._err

    @property
    def tty(self) -> bool:
        """Whether stderr is a terminal (as rich decides it): a spinner, else plain lines."""
        return self.err.is_terminal

    # --- events -------------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self._text(event.text)
        elif isinstance(event, StatusEvent) and event.warning:
            self._end_text_line()
            self.line(f"warning: {event.message}", style="yellow")
        elif isinstance(event, StatusEvent):
            if event.topic == "instructions":
                if self.verbose:
                    self._end_text_line()
                    self.line(event.message)
                return
            self._end_text_line()
            self.progress(event.message)
        elif isinstance(event, ToolCallStarted):
            self._end_text_line()
            self.line(f"→ {_tool_label(event.name)} {_preview(event.arguments)}")
        elif isinstance(event, ToolResultEvent):
            mark = "✓" if event.ok else "✗"
            self.line(f"{mark} {_tool_label(event.name)}: {event.summary}",
                      style=None if event.ok else "yellow")
        elif isinstance(event, RetryEvent):
            self.line(event.text, style="yellow")

    def _text(self, text: str) -> None:
        if self.json_mode or not text:
            return
        if not self._text_pending_newline and text.startswith("\n"):
            # The line was already ended for tool activity: a paragraph break needs one more.
            text = text[1:]
            if not text:
                return
        self._stop_spinner()
        self._write_out(text)
        self._text_pending_newline = not text.endswith("\n")

    def _end_text_line(self) -> None:
        # Separate one model turn's text from the next, and keep stderr lines off its tail.
        if self._text_pending_newline:
            self._write_out("\n")
            self._text_pending_newline = False

    def _write_out(self, text: str) -> None:
        """Write to stdout; once its reader is gone, the run goes on without printing."""
        if self._out_gone:
            return
        try:
            self.out.write(redact(text))
            self.out.flush()
        except BrokenPipeError:
            self._out_gone = True
            # Point stdout at the null device, so the flush at exit does not fail again.
            with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self.out.fileno())
                os.close(devnull)

    # --- stderr ---------------------------------------------------------------------------

    def progress(self, message: str) -> None:
        """What the agent is doing now: the spinner's label on a terminal, else a line."""
        if self.quiet:
            return
        if not self.tty:
            self.line(f"· {message}")
            return
        from rich.markup import escape

        if self._spinner is None:
            self._spinner = self.err.status(escape(message), spinner="dots")
            self._spinner.start()
        else:
            self._spinner.update(escape(message))

    def line(self, message: str, *, style: str | None = None) -> None:
        if self.quiet:
            return
        from rich.text import Text

        self._stop_spinner()
        self.err.print(Text(message, style=style or ""))

    def error(self, message: str, hint: str = "") -> None:
        """Shown even with --quiet."""
        from rich.text import Text

        self._stop_spinner()
        self._end_text_line()
        self.err.print(Text(f"error: {message}", style="bold red"))
        if hint:
            self.err.print(Text(f"what to do: {hint}"))

    def pause(self) -> None:
        """Before a prompt: nothing may draw over the question."""
        self._stop_spinner()
        self._end_text_line()

    def _stop_spinner(self) -> None:
        if self._spinner is not None:
            self._spinner.stop()
            self._spinner = None

    # --- the end ----------------------------------------------------------------------------

    def diff(self, diffs: list[FileDiff]) -> None:
        """The dry run's diff: to stdout after the text, or to stderr when stdout is JSON."""
        self._stop_spinner()
        self._end_text_line()
        if not diffs or (self.json_mode and self.quiet):
            return
        if self.json_mode:
            for row in _diff_rows(diffs):
                self.err.print(row)
            return
        # Rendered aside, then written by _write_out, which survives `| head`.
        from rich.console import Console

        rendered = io.StringIO()
        console = Console(file=rendered, highlight=False, soft_wrap=True,
                          force_terminal=self.out.isatty())
        for row in _diff_rows(diffs):
            console.print(row)
        self._write_out(rendered.getvalue())

    def summary(self, report: Report) -> None:
        """The closing lines: why it stopped, what it cost, which files changed and whether
        they were written. Errors show even with --quiet."""
        self._stop_spinner()
        self._end_text_line()
        if report.error is not None:
            self.error(report.error.message, report.error.hint)
        if self.quiet:
            return
        from rich.text import Text

        usage = report.usage
        parts = [f"{report.stop_reason}", f"{report.duration_ms / 1000:.1f} s"]
        if report.backend:
            parts.append(f"{report.backend}/{report.model}" if report.model else report.backend)
        if report.command == "loop":
            count = len(report.iterations)
            parts.append(f"{count} iteration{'s' if count != 1 else ''}")
        if usage.total_tokens:
            parts.append(f"{usage.prompt_tokens} prompt + {usage.completion_tokens} "
                         "completion tokens")
        self.err.print(Text(" · ".join(parts), style="bold" if report.exit_code == 0
                            else "bold yellow"))
        if report.cached_turns:
            turns = sum(i.turns for i in report.iterations)
            self.err.print(Text(f"{report.cached_turns} of {turns} answers came from the "
                                "response cache, not the model (--no-cache asks the model)",
                                style="yellow"))
        for change in report.changes:
            letter = _STATUS_LETTER.get(change["status"], "?")
            name = change["path"]
            if change["oldPath"]:
                name = f"{change['oldPath']} → {name}"
            self.err.print(Text(f"  {letter} {name}  +{change['insertions']} "
                                f"-{change['deletions']}"))
        if report.changes_note:
            self.err.print(Text(report.changes_note))
        elif report.changes:
            count = len(report.changes)
            files = f"{count} file{'s' if count != 1 else ''}"
            if report.applied:
                self.err.print(Text(f"wrote {files}"))
            elif report.dry_run:
                self.err.print(Text(f"dry run: {files} not written"))
            else:
                self.err.print(Text(f"nothing written ({files} pending)"))
        if report.artifacts_dir:
            self.err.print(Text(f"artifacts: {report.artifacts_dir}"))
        if report.session_id:
            self.err.print(Text(f"session: {report.session_id}", style="dim"))

    def result_json(self, report: Report,
                    redact_with: Callable[[str], str] | None = None) -> None:
        """``--json``: the one thing printed on stdout."""
        text = json.dumps(report.to_dict(), ensure_ascii=False, indent=2)
        if redact_with is not None:
            text = redact_with(text)
        self._write_out(text + "\n")

    def close(self) -> None:
        self._stop_spinner()


def _diff_rows(diffs: list[FileDiff]) -> Iterator[Text]:
    from rich.text import Text

    for file in diffs:
        for row in file.diff.splitlines():
            style = ("green" if row.startswith("+") and not row.startswith("+++") else
                     "red" if row.startswith("-") and not row.startswith("---") else
                     "bold" if row.startswith(("+++", "---")) else
                     "cyan" if row.startswith("@@") else "")
            yield Text(row, style=style)


def _preview(arguments: str) -> str:
    """A tool call's arguments on one short line: ``path=src/a.py, edits=[…]``."""
    try:
        parsed = json.loads(arguments) if arguments else {}
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        shown = []
        for key, value in parsed.items():
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            shown.append(f"{key}={' '.join(str(text).split())}")
        preview = ", ".join(shown)
    else:
        preview = " ".join(arguments.split())
    if len(preview) > ARGUMENT_PREVIEW:
        preview = preview[: ARGUMENT_PREVIEW - 1] + "…"
    return preview


def _tool_label(name: str) -> str:
    """``mcp__git__git_status`` -> ``git_status (MCP server git)``: which server ran it."""
    if name.startswith("mcp__") and name.count("__") >= 2:
        server, tool = name[len("mcp__"):].split("__", 1)
        return f"{tool} (MCP server {server})"
    return name
