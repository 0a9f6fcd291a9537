"""Servers that misbehave never hold a turn: each question ends in time with the reason,
in words, and the server's own message where it printed one."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path

import pytest

from agentls.langservers.servers import LangServers
from agentls.settings.models import LangServerConfig, LspConfig
from agentls.settings.sandbox import SandboxSettings
from agentls.workspace.fence import Workspace

from .conftest import fake_program

pytestmark = pytest.mark.usefixtures("sandboxed")


def _pool(command: str, mode: str, **fields: object) -> LangServers:
    given: dict[str, object] = {"startup_timeout_s": 3, "timeout_s": 3, **fields}
    server = LangServerConfig(command=command, args=[mode], globs=["*.txt"],
                              **given)  # type: ignore[arg-type]
    return LangServers(LspConfig(detect=False, servers={"fake": server}), SandboxSettings(),
                       secret_env="OPENAI_API_KEY")


def _workspace(tmp_path: Path) -> tuple[Workspace, Path]:
    root = tmp_path / "ws"
    root.mkdir(parents=True)
    (root / "a.txt").write_text("fine\n")
    ws = Workspace([root])
    wp = ws.resolve("a.txt")
    ws.stage_write(wp, "bad\n")
    return ws, wp.abs


async def _diagnostics(tmp_path: Path, mode: str, **fields: object) -> tuple[object, float]:
    ws, path = _workspace(tmp_path)
    pool = _pool(fake_program(tmp_path), mode, **fields)
    started = time.monotonic()
    try:
        answer = await pool.diagnostics(ws, [path])
    finally:
        await pool.aclose()
    return answer, time.monotonic() - started


async def test_a_working_server_answers_about_the_pending_text(tmp_path: Path) -> None:
    answer, _ = await _diagnostics(tmp_path, "ok")
    [file] = answer.files  # type: ignore[attr-defined]
    assert [(p.line, p.message, p.new) for p in file.problems] == [(1, "bad word", True)]
    assert answer.failures == {}  # type: ignore[attr-defined]


async def test_a_server_that_does_not_exist_is_named_with_what_to_do(tmp_path: Path) -> None:
    ws, path = _workspace(tmp_path)
    pool = _pool("no-such-language-server", "ok")
    answer = await pool.diagnostics(ws, [path])
    assert "'no-such-language-server' is not on PATH" in answer.failures["fake"]
    await pool.aclose()


async def test_a_server_that_exits_at_once_is_told_with_what_it_printed(tmp_path: Path) -> None:
    answer, took = await _diagnostics(tmp_path, "exit")
    why = answer.failures["fake"]  # type: ignore[attr-defined]
    assert "exited at start (code 3)" in why
    assert "cannot find the project's compiler" in why
    assert took < 3


async def test_a_server_that_never_answers_initialize_is_given_up_in_time(
        tmp_path: Path) -> None:
    answer, took = await _diagnostics(tmp_path, "silent")
    assert "did not answer initialize within 3 s" in answer.failures["fake"]  # type: ignore
    assert took < 6


async def test_a_flood_of_log_messages_is_read_and_not_all_logged(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="agentls.langservers")
    answer, _ = await _diagnostics(tmp_path, "flood", startup_timeout_s=60)
    assert answer.failures == {}  # type: ignore[attr-defined]
    assert answer.files[0].problems  # type: ignore[attr-defined]
    # logMessages of type Info are not even kept; nothing floods the log.
    assert len([r for r in caplog.records if "indexing" in r.getMessage()]) <= 25


async def test_malformed_json_from_the_server_ends_as_a_timeout_with_the_reason(
        tmp_path: Path) -> None:
    answer, took = await _diagnostics(tmp_path, "garbage")
    why = answer.failures["fake"]  # type: ignore[attr-defined]
    assert "did not answer initialize" in why and "unreadable message" in why
    assert took < 6


async def test_a_server_has_no_network(tmp_path: Path) -> None:
    answer, _ = await _diagnostics(tmp_path, "network")
    [problem] = answer.files[0].problems  # type: ignore[attr-defined]
    assert problem.message.startswith("no network")


async def test_a_server_missing_a_setting_shows_its_own_error(tmp_path: Path) -> None:
    answer, _ = await _diagnostics(tmp_path, "needs-setting")
    why = answer.failures["fake"]  # type: ignore[attr-defined]
    assert "fake.compilerPath is not set" in why
    # Given the setting, the same server works.
    answer, _ = await _diagnostics(tmp_path / "again", "needs-setting",
                                   settings={"fake": {"compilerPath": "/usr/bin/cc"}})
    assert answer.failures == {}  # type: ignore[attr-defined]


async def test_a_server_that_stops_answering_requests_times_out_and_stays_usable(
        tmp_path: Path) -> None:
    ws, path = _workspace(tmp_path)
    pool = _pool(fake_program(tmp_path), "hang-requests")
    started = time.monotonic()
    answer = await pool.definition(ws, path, 1, 1)
    assert "did not answer textDocument/definition within 3 s" in answer.failures["fake"]
    assert time.monotonic() - started < 6
    # Diagnostics are pushed, not requested: they still come.
    answer = await pool.diagnostics(ws, [path])
    assert answer.files[0].problems and answer.failures == {}
    await pool.aclose()


async def test_a_crashed_server_is_restarted_once_then_given_up(tmp_path: Path) -> None:
    ws, path = _workspace(tmp_path)
    pool = _pool(fake_program(tmp_path), "ok")
    await pool.diagnostics(ws, [path])
    [server] = pool.servers()

    async def crash() -> None:
        assert server.client is not None and server.client._server is not None
        server.client._server.kill()
        await asyncio.wait_for(asyncio.shield(server.client.exited), 5)

    await crash()
    answer = await pool.diagnostics(ws, [path])
    assert answer.failures == {} and answer.files[0].problems
    assert (server.starts, server.restarts) == (2, 1)
    await crash()
    answer = await pool.diagnostics(ws, [path])
    assert "exited (code -9) again after a restart" in answer.failures["fake"]
    assert server.starts == 2
    await pool.aclose()


async def test_idle_servers_are_stopped_and_start_again_on_use(tmp_path: Path) -> None:
    ws, path = _workspace(tmp_path)
    pool = _pool(fake_program(tmp_path), "ok")
    pool.config = pool.config.model_copy(update={"idle_stop_s": 0.01})
    await pool.diagnostics(ws, [path])
    [server] = pool.servers()
    await asyncio.sleep(0.05)
    await pool.stop_idle()
    assert not server.running
    answer = await pool.diagnostics(ws, [path])
    assert answer.files[0].problems and server.running and server.restarts == 0
    await pool.aclose()


async def test_what_a_server_started_ends_with_it_even_without_the_sandbox(
        tmp_path: Path) -> None:
    ws, path = _workspace(tmp_path)
    pool = _pool(fake_program(tmp_path), "child")
    pool.sandbox = SandboxSettings(mode="off")
    answer = await pool.diagnostics(ws, [path])
    [problem] = answer.files[0].problems
    child = int(problem.message.split()[1])
    os.kill(child, 0)  # running
    started = time.monotonic()
    await pool.aclose()
    assert time.monotonic() - started < 5
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"the server's child {child} outlived it")


async def test_two_workspaces_get_a_server_each(tmp_path: Path) -> None:
    first, first_path = _workspace(tmp_path / "one")
    second, second_path = _workspace(tmp_path / "two")
    second.stage_write(second.resolve("a.txt"), "fine\n")
    pool = _pool(fake_program(tmp_path), "ok")
    try:
        one = await pool.diagnostics(first, [first_path])
        two = await pool.diagnostics(second, [second_path])
        assert [p.message for p in one.files[0].problems] == ["bad word"]
        assert two.files[0].problems == [] and two.files[0].servers == ["fake"]
        assert len({s.pid for s in pool.servers()}) == 2
        assert {s.roots for s in pool.servers()} == {tuple(first.roots), tuple(second.roots)}
    finally:
        await pool.aclose()
