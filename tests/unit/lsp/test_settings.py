"""Resolving the editor's `agentls` settings section key by key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agentls.lsp.services.editor_settings import register_client_section, resolve
from agentls.lsp.services.resolved_settings import LspSettings


def test_valid_settings_apply(tmp_path: Path) -> None:
    resolved = resolve(tmp_path, {"max_iterations": 7, "lsp": {"chat_requests_per_minute": 3}})
    assert resolved.problems == []
    assert resolved.settings.max_iterations == 7
    assert resolved.lsp == LspSettings(chat_requests_per_minute=3)


def test_the_agents_language_servers_share_the_lsp_table_with_the_editors_keys(
        tmp_path: Path) -> None:
    resolved = resolve(tmp_path, {"lsp": {
        "chat_requests_per_minute": 3, "detect": False,
        "servers": {"clangd": {"args": ["--log=error"]}}}})
    assert resolved.problems == []
    assert resolved.lsp == LspSettings(chat_requests_per_minute=3)
    assert resolved.settings.lsp.detect is False
    assert resolved.settings.lsp.servers["clangd"].args == ["--log=error"]


def test_a_bad_value_is_named_and_left_out_while_the_others_apply(tmp_path: Path) -> None:
    resolved = resolve(tmp_path, {
        "max_iterations": "lots",
        "backends": {"mine": {"base_url": "http://localhost:1/v1", "model": "m"}},
        "backend": "mine",
        "lsp": {"chat_queue_limit": 0, "nope": 1},
    })
    assert resolved.settings.max_iterations == 25  # the default
    assert resolved.settings.backend == "mine"  # valid keys still apply
    assert resolved.lsp == LspSettings()
    [iterations, queue, unknown] = resolved.problems
    assert iterations.startswith("`agentls.max_iterations` = 'lots' is not valid")
    assert "(e.g. 25)" in iterations
    assert queue.startswith("`agentls.lsp.chat_queue_limit` = 0 is not valid")
    assert unknown.startswith("`agentls.lsp.nope` is not an AgentLS setting")


def test_values_valid_alone_but_not_together_fall_back_to_the_lower_layers(
        tmp_path: Path) -> None:
    resolved = resolve(tmp_path, {"backend": "missing"})
    assert resolved.settings.backend == "openai"
    assert len(resolved.problems) == 1 and "backend 'missing' is not configured" in (
        resolved.problems[0])
    assert "agentls config" not in resolved.problems[0]  # CLI advice is left out


def test_a_broken_workspace_file_does_not_cost_the_editors_settings(tmp_path: Path) -> None:
    (tmp_path / ".agentls").mkdir()
    (tmp_path / ".agentls" / "config.toml").write_text("max_iterations = = 3\n")
    resolved = resolve(tmp_path, {"backend": "ollama", "max_iterations": 7})
    assert resolved.settings.backend == "ollama" and resolved.settings.max_iterations == 7
    assert len(resolved.problems) == 1 and "config.toml" in resolved.problems[0]
    assert "agentls config" not in resolved.problems[0]


def test_a_registered_section_is_checked_by_its_owner(tmp_path: Path) -> None:
    register_client_section("test_widgets", lambda value: [] if isinstance(value, list)
                            else ["`agentls.test_widgets` must be a list"])
    ok = resolve(tmp_path, {"test_widgets": [1]})
    bad = resolve(tmp_path, {"test_widgets": 3})
    assert ok.problems == [] and ok.client["test_widgets"] == [1]
    assert bad.problems == ["`agentls.test_widgets` must be a list"]


def test_fetching_the_client_section_imports_nothing_heavy() -> None:
    # It runs on the event loop: importing pydantic and the settings models there held up
    # every request for ~60 ms after start-up (they are imported in a thread, by resolve).
    code = (
        "import asyncio, sys\n"
        "from types import SimpleNamespace\n"
        "from agentls.lsp.services import editor_settings as settings\n"
        "ls = SimpleNamespace(initialization_options={'backend': 'x', 'lsp': {'a': 1}},\n"
        "    pushed_settings={'lsp': {'b': 2}}, root_uri=None,\n"
        "    client_capabilities=SimpleNamespace(workspace=None))\n"
        "print(asyncio.run(settings.fetch_client_section(ls)))\n"
        "print('agentls.settings.config' in sys.modules, 'pydantic' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    merged, heavy = done.stdout.strip().splitlines()
    assert merged == "{'backend': 'x', 'lsp': {'a': 1, 'b': 2}}"
    assert heavy == "False False"
