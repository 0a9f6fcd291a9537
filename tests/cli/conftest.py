"""Fixtures of the headless command tests: a project, and an environment whose active backend
is the scripted model server."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.headless_helpers import make_project, scripted_env

from agentls.devtools.replay.command import ReplayServer


@pytest.fixture
def env(server: ReplayServer) -> dict[str, str]:
    return scripted_env(server)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")
