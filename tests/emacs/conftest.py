"""What the eglot tests share: finding Emacs with eglot, the scripted model's options, the
session's environment, and the outcome every session must end with."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

SESSION = Path(__file__).with_name("eglot_session.el")


def emacs_with_eglot() -> str:
    emacs = shutil.which("emacs")
    if emacs is None or subprocess.run(
            [emacs, "--batch", "--eval", "(progn (package-initialize) (require 'eglot))"],
            capture_output=True, timeout=60).returncode != 0:
        pytest.skip("Emacs with eglot is not installed: `make emacs-eglot` installs it")
    return emacs


def scripted_options(base_url: str) -> dict[str, Any]:
    """AgentLS's initializationOptions for the scripted model (agentls.devtools.replay)."""
    return {
        "backend": "scripted",
        "backends": {"scripted": {"base_url": base_url, "model": "scripted-model",
                                  "api_key_env": None, "context_max_tokens": 32000}},
        "cache": {"enabled": False}, "retry": {"max_retries": 0},
    }


def session_env(tmp_path: Path, **session: str) -> dict[str, str]:
    """The environment for eglot_session.el: a fresh HOME (no user config of the person
    running the tests) and the session's AGENTLS_EGLOT_* switches (keyword in lower case)."""
    home = tmp_path / "home"
    home.mkdir()
    return {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            **{f"AGENTLS_EGLOT_{key.upper()}": value for key, value in session.items()}}


def assert_both_edits_landed(result: dict[str, Any], path: Path, expected: str,
                             closing: str, remaining: list[Any], log: Path) -> None:
    """The Fix and the chat's edit: in eglot's buffer and the saved file, recorded applied by
    the server, no prompt, never "not applied", the chat's closing message naming the edit,
    the scripted model used up, and a clean server log."""
    assert result["buffer"] == expected
    assert path.read_text() == expected
    records = {r["title"]: r["applied"] for r in result["records"]}
    assert sorted(records.values()) == [["applied"], ["applied"]], records
    assert result["prompts"] == [], result["prompts"]
    assert not [m for m in result["messages"] if "not applied" in m or "does not hold" in m]
    assert any(closing in m and f"Edit applied: {path.name}." in m
               for m in result["messages"]), result["messages"]
    assert remaining == [], remaining
    server_log = log.read_text()
    assert " ERROR " not in server_log and "Traceback" not in server_log, server_log
