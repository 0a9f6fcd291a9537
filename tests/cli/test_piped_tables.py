"""Piped table commands print one plain line per row (``cells<TAB>...``), as
``git config --list`` does; ``--json`` is unchanged (issue 38, item 7)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import tomli_w
from tests.cli.headless_helpers import agentls, make_project

from agentls.devtools.replay.command import ReplayServer


def _rows(stdout: str, fields: int) -> list[list[str]]:
    lines = stdout.splitlines()
    assert lines and all(line.strip() for line in lines), stdout  # no blank separator lines
    rows = [line.split("\t") for line in lines]
    assert {len(row) for row in rows} == {fields}, stdout
    for row in rows:  # no padding: rich's table would pad cells with spaces
        assert all(cell == cell.strip() for cell in row), row
    return rows


def test_config_list_piped_is_key_value_source(tmp_path: Path, env: dict[str, str]) -> None:
    project = make_project(tmp_path / "p")
    tabbed = {**env, "AGENTLS_BACKENDS__SCRIPTED__MODEL": "a model\twith a tab"}
    done = agentls("-C", str(project), "config", "list", env=tabbed)
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout, 3)
    keys = [row[0] for row in rows]
    assert len(keys) == len(set(keys)) and "timeout_ms" in keys
    listing = json.loads(agentls("-C", str(project), "config", "list", "--json",
                                 env=tabbed).stdout)
    assert json.dumps(listing).count("timeout_ms") >= 1  # --json unchanged: still JSON
    model = next(row for row in rows if row[0] == "backends.scripted.model")
    assert model[1] == "a model\\twith a tab"  # a tab inside a value cannot split the row
    assert "AGENTLS_BACKENDS__SCRIPTED__MODEL" in model[2] or "env" in model[2]
    grepped = [line for line in done.stdout.splitlines() if "model" in line]
    assert grepped and max(map(len, grepped)) < 400  # not a 450-1,350 wide padded row


def test_sessions_piped_one_line_per_session(server: ReplayServer, env: dict[str, str],
                                             tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    server.load({"steps": [{"reply": {"text": "ok"}, "times": "*"}]})
    for prompt in ("first\tprompt", "second prompt " * 30):
        assert agentls("run", "-p", prompt, "--cwd", str(project), env=env).returncode == 0
    done = agentls("sessions", "--cwd", str(project), env=env)
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout, 6)
    listed = json.loads(agentls("sessions", "--json", "--cwd", str(project), env=env).stdout)
    assert [row[0] for row in rows] == [s["id"] for s in listed["sessions"]]
    assert all(row[2] == "scripted/scripted-model" and row[4].isdigit() for row in rows)
    assert any(row[5].startswith("second prompt second prompt") for row in rows)  # not cut


def test_backends_piped_one_line_per_backend(server: ReplayServer, env: dict[str, str],
                                             tmp_path: Path) -> None:
    done = agentls("-C", str(tmp_path), "backends", env=env)
    rows = _rows(done.stdout, 7)
    names = [row[0] for row in rows]
    listed = json.loads(agentls("-C", str(tmp_path), "backends", "--json", env=env).stdout)
    assert names == [b["name"] for b in listed["backends"]]
    scripted = next(row for row in rows if row[0] == "scripted")
    assert scripted[1] == "active" and scripted[3] == "available"
    assert "sandbox:" in done.stderr and "sandbox:" not in done.stdout


def test_mcp_piped_one_line_per_server(env: dict[str, str], tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    folder = Path(env.get("XDG_CONFIG_HOME") or os.environ["XDG_CONFIG_HOME"]) / "agentls"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(tomli_w.dumps({"mcp": {"servers": {
        "one": {"command": sys.executable, "args": ["-c", "pass"]},
        "two": {"command": "whatever", "enabled": False}}}}))
    done = agentls("mcp", "--no-start", "--cwd", str(project), env=env)
    rows = _rows(done.stdout, 8)
    assert [row[0] for row in rows] == ["one", "two"]
    assert rows[0][1] == "stdio" and rows[1][2] == "disabled"
