"""Run artifacts: the folder, atomic JSON files, and secrets redacted however they are spelt."""

from __future__ import annotations

import json
from pathlib import Path

from agentls.cli.artifacts import REDACTED, RunArtifacts


def test_secrets_are_redacted_also_as_json_escapes_them(tmp_path: Path) -> None:
    secret = 'pa"ss\\word-0123'
    artifacts = RunArtifacts.create(tmp_path / "runs", tmp_path, [secret])
    artifacts.write_json("result.json", {"text": f"the password is {secret}"})
    artifacts.record({"text": secret})
    artifacts.close()
    for name in ("result.json", "transcript.ndjson"):
        written = (artifacts.directory / name).read_text()
        assert "word-0123" not in written and REDACTED in written
    assert json.loads((artifacts.directory / "result.json").read_text())["text"] == (
        f"the password is {REDACTED}")


def test_secrets_learnt_later_are_redacted_too(tmp_path: Path) -> None:
    artifacts = RunArtifacts(tmp_path, ["short"])  # under 8 characters: ordinary words stay
    artifacts.add_secrets(["late-key-0123456789"])
    assert artifacts.redact("short late-key-0123456789") == f"short {REDACTED}"
