"""Shared fixtures: every test gets its own user config and cache folders."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from agentls.devtools.replay.command import ReplayServer

# Property tests explore new random examples on every developer run; CI (.ci/run sets
# HYPOTHESIS_PROFILE=ci) runs a fixed set, so a landing is not decided by the examples drawn
# that day. A failure found locally becomes a fixed case (`@example`) or a fixed table row.
settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory,
                       monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point platformdirs at fresh folders so no test reads or writes the person's own."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    for name in list(os.environ):
        if name.startswith(("AGENTLS_", "OPENAI_")):
            monkeypatch.delenv(name, raising=False)
    yield home


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    """The scripted model server (not a real model), with an empty script: tests ``load`` one."""
    with ReplayServer({"steps": []}) as running:
        yield running
