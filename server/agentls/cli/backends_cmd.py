"""`agentls backends [--json]`: which backends can run here, and what to do about the others.

Model servers (every configured `openai`-type backend) get one ``GET /v1/models``: status
``available``, ``unauthenticated`` (401/403), ``unreachable``, or ``model-missing`` when the
configured model is not listed. Agent CLIs (codex, copilot, claude: the configured ones
under their names, else one entry per CLI) are looked up on PATH and their sign-in checked
with each CLI's own documented command: ``available``, ``missing``, ``unauthenticated``;
agent CLIs agentls has no adapter for are listed as ``unsupported`` when installed.

All probes run at once under one hard deadline, so the command answers within 3 s even
when a host accepts connections and never answers (it shows as ``unreachable``, timed out).
Exit 0 when at least one backend is available, 2 ("no backend detected") otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentls.cli import exitcodes
from agentls.settings import config

if TYPE_CHECKING:
    from agentls.llm.agent_cli.backends import AgentCli

SCHEMA_VERSION = 1
PROBE_TIMEOUT_S = 1.4  # one probe: connect + answer, or one sign-in check
DEADLINE_S = 2.0  # every probe, counted from the start of `run`; the process needs the rest

Kind = Literal["openai-compatible", "agent-cli"]


@dataclass
class BackendReport:
    """One row of the listing; ``to_json`` is the stable `--json` shape (schema 1)."""

    name: str
    kind: Kind
    type: str  # the backend's `type` (openai, codex, copilot, claude) or the CLI's name
    status: str  # available | unauthenticated | unreachable | model-missing | missing | unsupported
    detail: str
    model: str | None
    url: str | None
    active: bool  # the configured default backend (`agentls config get backend`)
    next: str | None  # what to do to make it available; None when it is

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "backends", help="which backends are usable here: model servers and agent CLIs")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace, workspace: Path) -> int:
    started = time.monotonic()
    try:
        loaded = config.load(workspace)
        settings = loaded.settings
    except config.ConfigError as exc:
        print(f"agentls backends: {exc}", file=sys.stderr)
        return exitcodes.CONFIG_ERROR
    for notice in loaded.notices:  # an untrusted project file's left-out keys
        print(f"agentls backends: warning: {notice}", file=sys.stderr)
    reports = asyncio.run(probe_all(settings, deadline=started + DEADLINE_S))
    available = [r.name for r in reports if r.status == "available"]
    if args.json:
        print(json.dumps({
            "schema": SCHEMA_VERSION,
            "active": settings.backend,
            "available": available,
            "backends": [r.to_json() for r in reports],
        }, indent=2))
    else:
        from agentls.cli.tables import for_people

        _print_table(reports)
        # piped, stdout holds the rows alone: the sandbox's state goes to stderr
        print(sandbox_line(settings), file=sys.stdout if for_people() else sys.stderr)
    if not available:
        print("agentls backends: no backend detected — start a model server or install and "
              "sign in to an agent CLI (see `what to do` above)", file=sys.stderr)
        return exitcodes.NO_BACKEND
    return exitcodes.OK


async def probe_all(
    settings: config.Settings,
    *,
    deadline: float,
    env: Mapping[str, str] | None = None,
) -> list[BackendReport]:
    """Every backend's report, probed in parallel; whatever has not answered by ``deadline``
    (a ``time.monotonic()`` value) is reported as timed out."""
    from agentls.engine.external import adapter_for_backend
    from agentls.llm.agent_cli.backends import CLI_KINDS, installed_unsupported

    timeout = max(0.2, min(PROBE_TIMEOUT_S, deadline - time.monotonic() - 0.2))
    jobs: list[tuple[Awaitable[BackendReport], BackendReport]] = []
    for name, backend in settings.backends.items():
        if backend.type == "openai":
            jobs.append((_probe_server(name, backend, settings, env, timeout),
                         _server_timed_out(name, backend, settings, timeout)))
    for kind in CLI_KINDS:
        configured = [(n, b) for n, b in settings.backends.items() if b.type == kind]
        for name, backend in configured or [(kind, config.BackendConfig(type=kind))]:
            cli = adapter_for_backend(backend, settings=settings, env=env)
            report = BackendReport(name, "agent-cli", kind, "unauthenticated",
                                   "the sign-in check did not answer in time", cli.model, None,
                                   settings.backend == name, cli.login_hint)
            jobs.append((_probe_cli(report, cli, timeout), report))

    tasks = [asyncio.ensure_future(job) for job, _ in jobs]
    done, pending = await asyncio.wait(tasks, timeout=max(0.0, deadline - time.monotonic()))
    for task in pending:
        task.cancel()
    if pending:
        # Let cancelled probes close sockets and kill their check processes.
        await asyncio.wait(pending, timeout=0.2)
    reports = []
    for task, (_, fallback) in zip(tasks, jobs, strict=True):
        if task in done and task.exception() is None:
            reports.append(task.result())
        else:
            if task in done:
                fallback.detail = f"the probe failed: {task.exception()}"
            reports.append(fallback)
    for found in installed_unsupported(env):
        reports.append(BackendReport(
            found.name, "agent-cli", found.name, "unsupported",
            f"{found.label} is installed ({found.path}) but agentls has no adapter for it",
            None, None, False, "use codex, copilot or claude, or a model server"))
    return reports


# --- model servers ------------------------------------------------------------------------------


async def _probe_server(name: str, backend: config.BackendConfig, settings: config.Settings,
                        env: Mapping[str, str] | None, timeout: float) -> BackendReport:
    from agentls.llm.probe import probe_models

    key = config.api_key(backend, env)
    probe = await probe_models(backend.base_url, key, timeout=timeout)
    report = BackendReport(name, "openai-compatible", "openai", "available", "", backend.model,
                           backend.base_url, settings.backend == name, None)
    if probe.outcome == "ok":
        if probe.serves(backend.model):
            report.detail = (f"serves {backend.model}" if not probe.any_model
                             else "answers any model name (llama.cpp server)")
            return report
        listed = ", ".join(probe.models[:5]) + (", …" if len(probe.models) > 5 else "")
        report.status = "model-missing"
        report.detail = (f"model {backend.model!r} is not served here"
                         + (f" (serves: {listed})" if listed else " (it lists no models)"))
        report.next = _model_hint(name, backend, probe.models)
    elif probe.outcome == "auth":
        report.status = "unauthenticated"
        report.detail = f"HTTP {probe.status_code}: {probe.message}"
        if backend.api_key_env and key is None:
            report.detail += f" ({backend.api_key_env} is not set)"
        report.next = (f"set {backend.api_key_env} to a valid API key for this server"
                       if backend.api_key_env else
                       f"the server wants a key: agentls config set backends.{name}.api_key_env "
                       "VARIABLE, then set that variable")
    elif probe.outcome == "http_error" and probe.status_code == 404:
        report.detail = "reachable; it does not list models (HTTP 404), so the model is unchecked"
    else:
        report.status = "unreachable"
        report.detail = (f"HTTP {probe.status_code}: {probe.message}" if probe.status_code
                         else probe.message)
        report.next = _unreachable_hint(name)
    return report


def _server_timed_out(name: str, backend: config.BackendConfig, settings: config.Settings,
                      timeout: float) -> BackendReport:
    return BackendReport(name, "openai-compatible", "openai", "unreachable",
                         f"timed out after {timeout:g} s", backend.model, backend.base_url,
                         settings.backend == name, _unreachable_hint(name))


def _unreachable_hint(name: str) -> str:
    return (f"start the server, or point agentls at it: agentls config set "
            f"backends.{name}.base_url URL")


def _model_hint(name: str, backend: config.BackendConfig, served: tuple[str, ...]) -> str:
    if ":11434" in backend.base_url:  # Ollama's port: it fetches models on demand
        return f"ollama pull {backend.model}"
    if served:
        return f"agentls config set backends.{name}.model {served[0]}"
    return f"load {backend.model} on the server"


# --- agent CLIs ---------------------------------------------------------------------------------


async def _probe_cli(report: BackendReport, cli: AgentCli, timeout: float
                     ) -> BackendReport:
    detection = await cli.detect(timeout)
    report.status = detection.status
    report.detail = (f"{detection.detail} ({detection.path})" if detection.path
                     and detection.status == "available" else detection.detail)
    report.next = {"available": None, "missing": cli.install_hint}.get(
        detection.status, cli.login_hint)
    return report


# --- human output -------------------------------------------------------------------------------


def sandbox_line(settings: config.Settings) -> str:
    """Where commands the agent runs would run (DESIGN.md decision 11), and why."""
    from agentls.sandbox.bwrap import probe

    mode = settings.sandbox.mode
    if mode == "off":
        return "sandbox: off (sandbox.mode = off): commands run directly on this machine, unsafe"
    status = probe()
    if status.available:
        network = "network on" if settings.sandbox.network else "no network"
        return f"sandbox: {status.describe()}, mode {mode}: commands run sandboxed, {network}"
    then = "commands are refused" if mode == "required" else "every command is asked"
    return f"sandbox: {status.describe()}; mode {mode}: {then}"


_STYLES = {"available": "green", "unsupported": "dim"}


def _print_table(reports: list[BackendReport]) -> None:
    from rich.text import Text

    from agentls.cli.tables import for_people, new_table, print_rows, table_console

    if not for_people():  # piped: one line per backend, the active one marked in its column
        print_rows((r.name, "active" if r.active else "", r.type, r.status, r.model or "",
                    r.detail, r.next or "") for r in reports)
        return
    console = table_console()
    # Narrow terminals: what to do goes under the table, in whole lines, not in a thin column.
    wide = console.width >= 120
    table = new_table()
    columns = ["backend", "type", "status", "model", "detail"] + (["what to do"] if wide else [])
    for column in columns:
        table.add_column(column, overflow="fold")
    for report in reports:
        style = _STYLES.get(report.status, "yellow")
        # Text cells: details quote servers ("[Errno 111] ...") and must not read as markup.
        cells = [
            Text(report.name + (" *" if report.active else "")),
            Text(report.type),
            Text(report.status, style=style),
            Text(report.model or ""),
            Text(report.detail),
        ]
        table.add_row(*cells, *([Text(report.next or "")] if wide else []))
    console.print(table)
    console.print("* the active backend (agentls config set backend NAME)", style="dim",
                  highlight=False)
    if not wide:
        for report in reports:
            if report.next:
                console.print(Text(f"{report.name}: {report.next}"))
