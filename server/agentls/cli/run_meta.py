"""What a headless run's artifacts and ``--json`` output say about the run itself
(``meta.json``: the command, versions, backend and model, options, timings), and the secrets
kept out of them: the values of credential-named environment variables."""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from agentls import __version__
from agentls.cli.artifacts import MIN_SECRET_LENGTH, RunArtifacts
from agentls.cli.report import Report

if TYPE_CHECKING:
    from agentls.settings.config import Settings

SECRET_NAME_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


def run_meta(args: argparse.Namespace, *, command: str, source: str, root: Path,
             settings: Settings | None, report: Report, artifacts: RunArtifacts | None,
             started_wall: float, options: Mapping[str, Any]) -> dict[str, Any]:
    """``meta.json``: written when the artifacts open, again once the backend is chosen, and
    at the end. ``options``: the command's own (``agentls loop``'s limits)."""
    backend = settings.backends.get(report.backend or "") if settings else None
    finished = report.duration_ms or None
    return {
        "schema": 1,
        "id": artifacts.directory.name if artifacts else None,
        "command": command,
        "agentlsVersion": __version__,
        "python": platform.python_version(),
        "platform": platform.system(),
        "workspace": str(root),
        "backend": report.backend,
        "model": report.model,
        "baseUrl": without_credentials(backend.base_url)
        if backend and backend.type == "openai" else None,
        "sessionId": report.session_id,
        "options": {
            "source": source,
            "quiet": args.quiet, "json": args.json, "dryRun": args.dry_run,
            "yes": args.yes, "noCache": args.no_cache,
            "timeoutMs": settings.timeout_ms if settings else None,
            "maxIterations": settings.max_iterations if settings else None,
            **options,
        },
        "timings": {
            "startedAt": iso(started_wall),
            "finishedAt": iso(started_wall + finished / 1000) if finished else None,
            "durationMs": finished,
        },
    }


def secret_values(environ: Mapping[str, str]) -> list[str]:
    """Values of environment variables whose names say they hold a credential: they must
    never reach an artifact or the --json output."""
    return [value for name, value in environ.items()
            if any(marker in name.upper() for marker in SECRET_NAME_MARKERS)
            and not name.upper().endswith("_ENV")  # names another variable, holds no key
            and len(value) >= MIN_SECRET_LENGTH]


def redactor(secrets: list[str]) -> Callable[[str], str]:
    return RunArtifacts(Path("."), secrets).redact


def without_credentials(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def iso(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))
