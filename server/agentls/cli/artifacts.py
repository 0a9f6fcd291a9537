"""``--artifacts``: a folder per run with what happened, for CI and for support (seed F-006).

``<workspace>/.agentls/runs/<id>/`` (or ``--artifacts-dir DIR/<id>/``) holds

* ``meta.json``: command, backend, model, options and timings; never the environment or a key;
* ``transcript.ndjson``: every engine event and the runner's own ``iteration``,
  ``completion`` and ``result`` records, one JSON object per line, flushed as it happens;
* ``result.json``: the ``--json`` object.

The id is a UTC timestamp and a random suffix (``20261122T011500Z-3f9c2a``): sortable, and
free of the characters Windows refuses in file names. Any write failure raises
``ArtifactsError``, which fails the run with exit 73 (RG-016).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from agentls.base import state_file
from agentls.engine.sessions.state_dir import ensure_state_dir
from agentls.policy import redaction
from agentls.policy.redaction import MARKER as REDACTED
from agentls.policy.redaction import MIN_SECRET_LENGTH as MIN_SECRET_LENGTH

__all__ = ["MIN_SECRET_LENGTH", "REDACTED", "ArtifactsError", "RunArtifacts"]


class ArtifactsError(Exception):
    """The artifacts could not be written; the message says where and what to do."""

    def __init__(self, path: Path, cause: OSError | str) -> None:
        reason = cause if isinstance(cause, str) else (cause.strerror or str(cause))
        super().__init__(
            f"cannot write run artifacts to {path}: {reason}. Run from a folder you can write "
            "to (--cwd DIR), choose another folder with --artifacts-dir DIR, or drop "
            "--artifacts.")
        self.path = path


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(3)}"


def default_base(workspace: Path) -> Path:
    return workspace / ".agentls" / "runs"


class RunArtifacts:
    """One run's artifact folder. Every value written passes through the redactor first."""

    def __init__(self, directory: Path, secret_values: Iterable[str] = ()) -> None:
        self.directory = directory
        self._transcript: IO[str] | None = None
        self.add_secrets(secret_values)

    @classmethod
    def create(cls, base: Path, workspace: Path, secret_values: Iterable[str] = (),
               run_id: str | None = None) -> RunArtifacts:
        directory = base / (run_id or new_run_id())
        try:
            if base == default_base(workspace):
                ensure_state_dir(workspace)  # so .agentls/ carries its .gitignore
            directory.mkdir(parents=True)
            artifacts = cls(directory, secret_values)
            path = directory / "transcript.ndjson"
            artifacts._transcript = path.open("x", encoding="utf-8", newline="\n")
        except OSError as exc:
            raise ArtifactsError(base, exc) from None
        return artifacts

    def add_secrets(self, values: Iterable[str]) -> None:
        """More values to redact, learnt once the settings name the backends' keys."""
        redaction.add_secrets(values)

    def redact(self, text: str) -> str:
        return redaction.redact(text)

    def _dumps(self, value: Any, *, indent: int | None = None) -> str:
        return self.redact(json.dumps(value, ensure_ascii=False, indent=indent, default=str))

    def record(self, entry: dict[str, Any]) -> None:
        """Append one line to the transcript and flush it, so a reader can follow along."""
        if self._transcript is None:
            return
        try:
            self._transcript.write(self._dumps(entry) + "\n")
            self._transcript.flush()
        except OSError as exc:
            raise ArtifactsError(self.directory / "transcript.ndjson", exc) from None
        except ValueError as exc:  # written after close
            raise ArtifactsError(self.directory / "transcript.ndjson", str(exc)) from None

    def write_json(self, name: str, value: dict[str, Any]) -> None:
        """Write ``name`` atomically: readers see the old file or the whole new one."""
        path = self.directory / name
        try:
            state_file.write_text(path, self._dumps(value, indent=2) + "\n")
        except OSError as exc:
            raise ArtifactsError(path, exc) from None

    def close(self) -> None:
        if self._transcript is not None:
            # Close only fails on a flush error that the last record already reported.
            with contextlib.suppress(OSError):
                self._transcript.close()
            self._transcript = None
