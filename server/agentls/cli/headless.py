"""What ``agentls run`` and ``agentls loop`` share: set-up, iterations, writing the changes,
artifacts, and the closing report (their options are in ``run_options.py``).

Order of a headless run: open the artifacts folder (if asked), read the prompt, load the
settings (flags over config, RG-002), pick the backend (``--backend``, else the session's,
else the configured one; an agent CLI such as ``codex`` runs through ``ExternalRunner``),
open or create the session, run the body (one iteration, or the loop), then write the
ChangeSet atomically (all files or none) unless the run was interrupted, ``--dry-run`` was
given, or the artifacts failed, and finish with the summary on stderr or the ``--json``
object on stdout.

Ctrl-C cancels the iteration in progress: the engine closes the session cleanly (every tool
call answered, every message stored), the pending changes are dropped, and the exit code is
130. (An agent CLI is stopped too, but what it already wrote stays written.)

The steps above are one object's life, sharing its renderer, report, session lock and
artifacts; apart are the prompt's reading (``run_inputs.py``), the session and its store
(``run_session.py``), ``meta.json`` and the secrets kept out of the output
(``run_meta.py``), the runners (``runners.py``), rendering (``render.py``), the report
(``report.py``, with ``Stopped``) and artifacts (``artifacts.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agentls.cli.artifacts import (
    MIN_SECRET_LENGTH,
    ArtifactsError,
    RunArtifacts,
    default_base,
)
from agentls.cli.frontend import TerminalFrontend, TtyPrompt
from agentls.cli.render import Renderer
from agentls.cli.report import ErrorInfo, IterationReport, Report, Stopped, StopReason
from agentls.cli.run_inputs import read_prompt
from agentls.cli.run_meta import redactor, run_meta, secret_values
from agentls.cli.run_session import open_session, open_store
from agentls.cli.runners import EngineRunner, ExternalRunner, Outcome, Runner
from agentls.engine.events import Event
from agentls.engine.sessions.lock import SessionLock
from agentls.engine.sessions.store import SessionInfo, SessionStore, title_from
from agentls.llm.backend import HINTS
from agentls.settings import config
from agentls.settings import view as config_view

# --- the run ------------------------------------------------------------------------------


Body = Callable[["Headless"], Awaitable[None]]


class Headless:
    def __init__(self, args: argparse.Namespace, workspace: Path, *, command: str,
                 source: str, settings_flags: dict[str, Any] | None = None,
                 inline_prompt: str | None = None, prompt_problem: str | None = None) -> None:
        self.args = args
        self.root = workspace
        self.command = command
        self.source = source  # the prompt or task file, "-", or "inline"
        self.inline_prompt = inline_prompt  # the prompt typed on the command line
        self.prompt_problem = prompt_problem  # why the command line gives no usable prompt
        self.settings_flags = dict(settings_flags or {})
        self.started = time.monotonic()
        self.started_wall = time.time()
        self.report = Report(command, dry_run=bool(args.dry_run))
        self.renderer = Renderer(quiet=args.quiet, json_mode=args.json,
                                 verbose=bool(getattr(args, "verbose", False)))
        self.secrets = secret_values(os.environ)
        self.artifacts: RunArtifacts | None = None
        self.artifacts_failure: ArtifactsError | None = None
        self.session_lock: SessionLock | None = None  # one run per session across processes
        self._notices_said: set[str] = set()
        self.interrupted = False
        self.prompt = ""
        self.iteration = 0
        self.settings: config.Settings | None = None  # set once the backend is chosen
        self.runner: Runner | None = None
        self.meta_options: dict[str, Any] = {}  # command-specific options for meta.json
        self._task: asyncio.Task[Outcome] | None = None

    # --- entry point ---------------------------------------------------------------------

    def execute(self, body: Body) -> int:
        _tolerant_stdout()
        try:
            if not self.root.is_dir():
                raise Stopped("usage", f"the workspace folder {self.root} does not exist",
                              "pass an existing folder with --cwd")
            if self.args.artifacts or self.args.artifacts_dir is not None:
                self._open_artifacts()
            self.prompt = read_prompt(self.command, self.source, self.inline_prompt,
                                      self.prompt_problem, self.root)
            settings = self._load_settings()
            asyncio.run(self._main(settings, body))
        except Stopped as stop:
            self.report.stop(stop.reason, stop.message, stop.hint, stop.kind)
        except KeyboardInterrupt:
            self.interrupted = True
            self.report.stop("interrupted")
        return self._finish()

    # --- before the first iteration ----------------------------------------------------------

    def _open_artifacts(self) -> None:
        base = self.args.artifacts_dir or default_base(self.root)
        try:
            self.artifacts = RunArtifacts.create(Path(base), self.root, self.secrets)
            self.report.artifacts_dir = str(self.artifacts.directory)
            self.artifacts.write_json("meta.json", self._meta())
        except ArtifactsError as exc:
            raise Stopped("artifacts-error", str(exc)) from None

    def _load_settings(self, **extra: Any) -> config.Settings:
        """Configuration with the command line on top (RG-002)."""
        flags = {**self.settings_flags, **extra}
        if self.args.no_cache:
            flags["cache.enabled"] = False
        if self.args.timeout is not None:
            flags["timeout_ms"] = max(1, round(self.args.timeout * 1000))
        try:
            # What the layers give validated field by field (only those schemas are built);
            # else config.load validates the whole model and words what is wrong.
            view = config_view.read(self.root, flags=flags)
            if view is not None:
                settings, notices = config_view.settings_of(view), view.notices
            else:
                loaded = config.load(self.root, flags=flags)
                settings, notices = loaded.settings, loaded.notices
        except config.ConfigError as exc:
            raise Stopped("config-error", str(exc)) from None
        for notice in notices:  # an untrusted project file: said once per run
            if notice not in self._notices_said:
                self._notices_said.add(notice)
                self.renderer.line(f"warning: {notice}", style="yellow")
        self._add_secrets(settings)
        return settings

    def _add_secrets(self, settings: config.Settings) -> None:
        """Every configured backend's key is a secret, whatever its variable is called."""
        keys = [config.api_key(b) for b in settings.backends.values()]
        found = [k for k in keys if k and len(k) >= MIN_SECRET_LENGTH and k not in self.secrets]
        self.secrets.extend(found)
        if self.artifacts is not None and found:
            self.artifacts.add_secrets(found)

    def _external(self, settings: config.Settings) -> config.BackendConfig | None:
        """The agent CLI named by --backend (or the configuration), if it is one."""
        name = self.args.backend or (None if self.args.session else settings.backend)
        if name is None or (name in settings.backends
                            and settings.backends[name].type == "openai"):
            return None
        from agentls.engine.external import external_backend

        found = external_backend(settings, name)
        if found is None:
            return None
        if self.args.session:
            raise Stopped("usage", f"{name} keeps its own sessions; --session works with "
                          "model-server backends only", "leave out --session")
        if self.args.dry_run:
            raise Stopped("usage", f"{name} edits files itself, so --dry-run cannot hold its "
                          "changes back", "leave out --dry-run, or use a model-server backend")
        return found

    def _choose_backend(self, settings: config.Settings,
                        session: SessionInfo | None) -> config.Settings:
        """Flags over session over config; the result names the backend and model used."""
        name = self.args.backend
        if name is None and session is not None and session.backend in settings.backends:
            name = session.backend
        name = name or settings.backend
        if name not in settings.backends:
            names = ", ".join(sorted(settings.backends))
            raise Stopped("backend-missing", f"no backend named {name!r} is configured "
                          f"(configured: {names})",
                          f"add it with `agentls config set backends.{name}.base_url URL`, "
                          "or pick one of the configured backends")
        extra = {"backend": name}
        if self.args.model:
            extra[f"backends.{name}.model"] = self.args.model
        # The layers again with the choice on top, unless the choice is what they gave.
        chosen = (settings if extra == {"backend": settings.backend}
                  else self._load_settings(**extra))
        backend = chosen.active_backend
        if backend.type != "openai":
            raise Stopped("usage", f"session {session.id if session else ''} belongs to the "
                          f"agent CLI {name}, which keeps its own sessions",
                          "leave out --session")
        self.report.backend, self.report.model = name, backend.model
        if backend.api_key_env and not config.api_key(backend):
            raise Stopped("backend-missing",
                          f"backend {name!r} needs an API key in the environment variable "
                          f"{backend.api_key_env}, which is not set",
                          HINTS["auth"], kind="auth")
        return chosen

    def _open_session(self, store: SessionStore) -> SessionInfo | None:
        if not self.args.session:
            return None
        session, self.session_lock = open_session(store, self.args.session, self.root,
                                                  wait=self.args.wait,
                                                  notify=self.renderer.progress)
        return session

    # --- the iterations -----------------------------------------------------------------------

    async def _main(self, settings: config.Settings, body: Body) -> None:
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGINT, self.interrupt)
        store: SessionStore | None = None
        tty: TtyPrompt | None = None
        try:
            external = self._external(settings)
            tty = TtyPrompt.open(stdin_used=self.source == "-")
            frontend = TerminalFrontend(self.renderer, yes=self.args.yes, prompt=tty,
                                        record=self._record)
            if external is not None:
                self.settings = settings
                name = self.args.backend or settings.backend
                self.runner = ExternalRunner(settings, name, external, self.root, frontend,
                                             model=self.args.model)
            else:
                store = open_store(self.root)
                existing = self._open_session(store)
                self.settings = self._choose_backend(settings, existing)
                session = existing or store.create_session(
                    backend=self.settings.backend, model=self.settings.active_backend.model,
                    mode="chat" if frontend.interactive else "automation",
                    title=title_from(self.prompt),
                    metadata={"source": f"agentls {self.command}"})
                store.record_command(session.id, self.prompt)
                self.runner = EngineRunner(self.settings, self.root, store, session, frontend,
                                           use_cache=not self.args.no_cache)
            self.report.backend, self.report.model = self.runner.backend, self.runner.model
            self.report.session_id = self.runner.session_id
            if self.artifacts is not None:
                self._write_artifact("meta.json", self._meta())
            try:
                await body(self)
            except asyncio.CancelledError:
                # Ctrl-C where signal handlers are unavailable (Windows) cancels this task.
                _uncancel()
                self.interrupted = True
            if self.interrupted:
                self.report.stop("interrupted")
            await self._settle()
        finally:
            if self.runner is not None:
                await self.runner.close()
            if tty is not None:
                tty.close()
            if store is not None:
                store.close()
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGINT)

    async def run_iteration(self, prompt: str, *, timeout_s: float | None = None) -> StopReason:
        """One iteration; its text becomes ``report.text``. Sets the report's stop reason and
        error unless it is done."""
        assert self.runner is not None
        self.iteration += 1
        started = time.monotonic()
        self.record({"kind": "iteration", "prompt": prompt})
        task = asyncio.create_task(self.runner.run(prompt, iteration=self.iteration,
                                                   timeout_s=timeout_s))
        self._task = task
        outcome: Outcome | None = None
        try:
            outcome = await task
        except asyncio.CancelledError:
            _uncancel()
            self.interrupted = True
        finally:
            self._task = None
        self.report.session_id = self.runner.session_id or self.report.session_id
        if outcome is None:
            outcome = Outcome("interrupted", f"{self.iteration}")
        if self.artifacts_failure is not None:
            outcome.reason = "artifacts-error"
            outcome.error = ErrorInfo("artifacts-error", str(self.artifacts_failure))
        elif self.interrupted:
            outcome.reason, outcome.error = "interrupted", None
        self.report.iterations.append(IterationReport(
            index=self.iteration, run_id=outcome.run_id,
            duration_ms=round(1000 * (time.monotonic() - started)), turns=outcome.turns,
            stop_reason=outcome.reason, usage=outcome.usage, changed=outcome.changed,
            cached_turns=outcome.cached_turns, check=outcome.check))
        self.report.text = outcome.text
        if outcome.reason != "done":
            error = outcome.error
            self.report.stop(outcome.reason, error.message if error else "",
                             error.hint if error else "", error.kind if error else None)
        return outcome.reason

    def interrupt(self) -> None:
        """Ctrl-C: stop the iteration in progress; pending changes are dropped, the session
        is kept."""
        self.interrupted = True
        self._abort()

    def _abort(self) -> None:
        if self.runner is not None and self.runner.cancel():
            return
        if self._task is not None and not self._task.done():
            self._task.cancel()  # not started yet, or an agent CLI: cancel it from outside

    # --- events and artifacts -----------------------------------------------------------------

    def _record(self, event: Event) -> None:
        self.record({"kind": event.kind, **event.to_dict()})

    def record(self, entry: dict[str, Any]) -> None:
        """A transcript line: time since start, loop iteration, then the entry."""
        if self.artifacts is None or self.artifacts_failure is not None:
            return
        # Not "iteration": status events carry their own (the engine's model turn).
        line = {"t": round(1000 * (time.monotonic() - self.started)),
                "loopIteration": self.iteration, **entry}
        try:
            self.artifacts.record(line)
        except ArtifactsError as exc:
            self.artifacts_failure = exc
            self._abort()

    def _write_artifact(self, name: str, value: dict[str, Any]) -> None:
        assert self.artifacts is not None
        try:
            self.artifacts.write_json(name, value)
        except ArtifactsError as exc:
            self.artifacts_failure = self.artifacts_failure or exc
            raise Stopped("artifacts-error", str(exc)) from None

    def _meta(self) -> dict[str, Any]:
        return run_meta(self.args, command=self.command, source=self.source, root=self.root,
                        settings=self.settings, report=self.report,
                        artifacts=self.artifacts, started_wall=self.started_wall,
                        options=self.meta_options)

    # --- the end ------------------------------------------------------------------------------

    async def _settle(self) -> None:
        """Write the changes (all or nothing) unless this run must not; report them."""
        assert self.runner is not None
        if self.artifacts is not None and self.artifacts_failure is None:
            # Prove the artifacts are still writable before touching the workspace: a run
            # whose artifacts fail must not leave changes behind.
            try:
                self.artifacts.write_json("meta.json", self._meta())
            except ArtifactsError as exc:
                self.artifacts_failure = exc
        why_not = ("interrupted" if self.interrupted else
                   "artifacts could not be written" if self.artifacts_failure else
                   "dry run" if self.args.dry_run else "")
        settled = await self.runner.settle(write=not why_not, why_not=why_not)
        self.report.changes = settled.changes
        self.report.applied = settled.applied
        self.report.changes_note = settled.note
        if self.args.dry_run:
            self.renderer.diff(settled.diffs)
        if settled.failure is not None:
            reason, error = settled.failure
            if self.report.stop_reason == "done":
                self.report.stop(reason, error.message, error.hint)
            else:  # the run already stopped for another reason; keep it, say this too
                self.renderer.error(error.message, error.hint)

    def _finish(self) -> int:
        if self.session_lock is not None:
            self.session_lock.release()
        self.report.duration_ms = max(1, round(1000 * (time.monotonic() - self.started)))
        if self.artifacts is not None:
            try:
                if self.artifacts_failure is None:
                    self.record({"kind": "result", "stopReason": self.report.stop_reason,
                                 "exitCode": self.report.exit_code})
                    self.artifacts.write_json("meta.json", self._meta())
                    self.artifacts.write_json("result.json", self.report.to_dict())
            except ArtifactsError as exc:
                self.artifacts_failure = exc
            if self.artifacts_failure is not None:
                self.report.stop("artifacts-error", str(self.artifacts_failure))
            self.artifacts.close()
        self.renderer.close()
        redact = self.artifacts.redact if self.artifacts else redactor(self.secrets)
        if self.args.json:
            self.renderer.result_json(self.report, redact)
        else:
            self.renderer.summary(self.report)
        return self.report.exit_code


# --- helpers --------------------------------------------------------------------------------


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        while task.cancelling():
            task.uncancel()


def _tolerant_stdout() -> None:
    # A model can answer in any script; a console that cannot show a character gets "?".
    stream = sys.stdout
    if isinstance(stream, io.TextIOWrapper) and \
            (stream.encoding or "").lower().replace("-", "") != "utf8":
        stream.reconfigure(errors="replace")
