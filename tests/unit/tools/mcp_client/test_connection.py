"""One MCP server's life through the SDK, sandboxed: the failure cases of the issue, with a
server written with the SDK (faulty_server.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentls.sandbox.bwrap import probe
from agentls.settings.mcp import McpServerConfig
from agentls.settings.sandbox import SandboxSettings
from agentls.tools.mcp.connection import McpConnection, McpServerError
from agentls.tools.mcp.convert import result_to_dict
from agentls.tools.mcp.launch import stdio_launch
from agentls.workspace.fence import Workspace

pytestmark = pytest.mark.skipif(not probe().available, reason="no sandbox here")

FAULTY = str(Path(__file__).with_name("faulty_server.py"))


def connection(tmp_path: Path, mode: str = "ok", **options: object) -> McpConnection:
    config = McpServerConfig(command=sys.executable, args=[FAULTY, mode],
                             startup_timeout_s=options.pop("startup_timeout_s", 20),  # type: ignore[arg-type]
                             **options)  # type: ignore[arg-type]
    ws = Workspace([tmp_path])
    return McpConnection("faulty", config, lambda: stdio_launch(
        "faulty", config, SandboxSettings(), ws, secret_env="OPENAI_API_KEY"))


async def test_crash_mid_call_restarts_once_then_a_clear_error(tmp_path: Path) -> None:
    conn = connection(tmp_path)
    try:
        assert (await conn.call("echo", {"text": "one"})).content[0].text == "echo: one"
        with pytest.raises(McpServerError, match=r"crashed during the call.*restarted"):
            await conn.call("crash", {})
        assert (await conn.call("echo", {"text": "two"})).content[0].text == "echo: two"
        assert conn.restarts == 1
        with pytest.raises(McpServerError, match=r"again after a restart.*not started again"):
            await conn.call("crash", {})
        with pytest.raises(McpServerError, match="not started again"):
            await conn.call("echo", {"text": "three"})
        assert conn.state == "failed"
    finally:
        await conn.aclose()


@pytest.mark.parametrize(("mode", "message"), [
    ("exit", "did not start.*cannot open its database"),
    ("garbage", "did not answer initialize within 3 s.*printed what is not MCP on stdout "
                "\\(first: 'this is not JSON-RPC'\\)"),
    ("hang", "did not answer initialize within 3 s \\(mcp.servers.faulty.startup_timeout_s\\)"),
])
async def test_a_server_that_does_not_start_says_why(tmp_path: Path, mode: str,
                                                      message: str) -> None:
    conn = connection(tmp_path, mode, startup_timeout_s=3)
    try:
        with pytest.raises(McpServerError, match=message):
            await conn.start()
        assert conn.state == "failed"
    finally:
        await conn.aclose()


async def test_a_missing_program_is_named(tmp_path: Path) -> None:
    config = McpServerConfig(command="no-such-mcp-server")
    conn = McpConnection("x", config, lambda: stdio_launch(
        "x", config, SandboxSettings(), Workspace([tmp_path]), secret_env=None))
    with pytest.raises(McpServerError, match="'no-such-mcp-server' is not on PATH"):
        await conn.start()


async def test_a_50_mb_result_is_cut_to_the_output_limit(tmp_path: Path) -> None:
    conn = connection(tmp_path, output_limit=8_000)
    try:
        result = await conn.call("big", {"mb": 50})
        out = result_to_dict(result, Workspace([tmp_path]), conn.config.output_limit)
        assert len(out["content"]) < 8_200 and "52,428,800 characters cut" in out["truncated"]
    finally:
        await conn.aclose()


async def test_a_call_that_takes_too_long_is_stopped(tmp_path: Path) -> None:
    conn = connection(tmp_path, timeout_s=1)
    try:
        with pytest.raises(McpServerError, match="did not answer within 1 s"):
            await conn.call("sleep", {"seconds": 30})
    finally:
        await conn.aclose()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_streamable_http_server_with_headers_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio
    import subprocess

    port = _free_port()
    server = subprocess.Popen([sys.executable, FAULTY, "http", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    monkeypatch.setenv("TRACKER_AUTH", "Bearer planted-tracker-token-123")
    config = McpServerConfig(url=f"http://127.0.0.1:{port}/mcp",
                             headers={"X-Team": "tools"},
                             headers_env={"Authorization": "TRACKER_AUTH"})
    conn = McpConnection("tracker", config, None)
    try:
        for _ in range(100):  # the server binds its port
            try:
                await conn.start()
                break
            except McpServerError:
                conn = McpConnection("tracker", config, None)
                await asyncio.sleep(0.1)
        assert conn.state == "running" and conn.note == "remote (streamable HTTP)"
        result = await conn.call("header", {"name": "Authorization"})
        assert result.content[0].text == "Bearer planted-tracker-token-123"
        assert (await conn.call("header", {"name": "X-Team"})).content[0].text == "tools"
    finally:
        await conn.aclose()
        server.terminate()
        server.wait()
    missing = McpConnection("other", McpServerConfig(
        url="http://127.0.0.1:1/mcp", headers_env={"Authorization": "UNSET_VARIABLE_X"}), None)
    with pytest.raises(McpServerError, match="UNSET_VARIABLE_X is not set"):
        await missing.start()


async def test_without_a_sandbox_a_sandboxed_server_does_not_start_and_says_how_to_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLS_SANDBOX_UNAVAILABLE", "the test says so")
    conn = connection(tmp_path)
    with pytest.raises(McpServerError, match=r"must run in the sandbox and no sandbox can run "
                       r"here \(disabled by AGENTLS_SANDBOX_UNAVAILABLE.*sandbox = false"):
        await conn.start()


async def test_unsandboxed_the_environment_is_still_cleared(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted-key-for-the-env-test-0123")
    monkeypatch.setenv("SOME_OTHER_VARIABLE", "present")
    conn = connection(tmp_path, sandbox=False)
    try:
        env = await conn.call("env", {"variable": "OPENAI_API_KEY"})
        other = await conn.call("env", {"variable": "SOME_OTHER_VARIABLE"})
        assert conn.note.startswith("not sandboxed (sandbox = false)")
        assert env.content[0].text == "<unset>" and other.content[0].text == "<unset>"
    finally:
        await conn.aclose()


async def test_a_server_that_did_not_start_is_tried_again_a_while_later(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentls.tools.mcp import connection as module

    program = tmp_path / "bin" / "my-mcp-server"
    config = McpServerConfig(command=str(program), sandbox=False)
    conn = McpConnection("late", config, lambda: stdio_launch(
        "late", config, SandboxSettings(), Workspace([tmp_path]), secret_env=None))
    try:
        with pytest.raises(McpServerError, match="is not an executable file"):
            await conn.start()
        program.parent.mkdir()
        program.write_text(f"#!/bin/sh\nexec {sys.executable} {FAULTY}\n")
        program.chmod(0o755)
        with pytest.raises(McpServerError, match="is not an executable file"):
            await conn.start()  # right away: the same error, no new attempt
        monkeypatch.setattr(module, "START_RETRY_S", 0.0)
        await conn.start()  # installed since: it starts
        assert conn.state == "running"
    finally:
        await conn.aclose()


async def test_a_server_installed_where_the_sandbox_hides_things_still_starts(
        tmp_path: Path) -> None:
    # Like a pipx/uv tool or an npm global under nvm: in a folder the sandbox hides (/tmp
    # here, a home for a person), started through a #! script.
    tool = tmp_path / "tools" / "faulty-venv"
    (tool / "bin").mkdir(parents=True)
    (tool / "lib").mkdir()
    (tool / "lib" / "server.py").write_text(Path(FAULTY).read_text())
    program = tool / "bin" / "faulty-server"
    program.write_text(f"#!{sys.executable}\nimport runpy\n"
                       f"runpy.run_path({str(tool / 'lib' / 'server.py')!r}, "
                       "run_name='__main__')\n")
    program.chmod(0o755)
    workspace = tmp_path / "project"
    workspace.mkdir()
    config = McpServerConfig(command=str(program))
    conn = McpConnection("faulty", config, lambda: stdio_launch(
        "faulty", config, SandboxSettings(), Workspace([workspace]), secret_env=None))
    try:
        await conn.start()
        assert conn.note.startswith("sandboxed")
        assert (await conn.call("echo", {"text": "hi"})).content[0].text == "echo: hi"
        # Only the tool's own folder is shown, not its neighbours.
        (tmp_path / "tools" / "other.txt").write_text("a neighbour's file")
        outside = await conn.call("read", {"path": str(tmp_path / "tools" / "other.txt")})
        assert "No such file" in outside.content[0].text
    finally:
        await conn.aclose()


def test_program_paths_never_expose_a_whole_home(tmp_path: Path) -> None:
    from agentls.tools.mcp.launch import program_paths

    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    script = home / ".local" / "bin" / "tool"
    script.write_text("#!/usr/bin/env sh\n")
    paths = program_paths(str(script), {"HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert str(script) in paths and str(home / ".local") not in paths
    assert str(home) not in paths


async def test_a_server_script_under_tmp_given_as_an_argument_starts(tmp_path: Path) -> None:
    # `python /tmp/.../server.py`: the interpreter is visible, the script (and the folder it
    # imports from) only because its argument names it (issue 38: a checkout under /tmp).
    folder = tmp_path / "checkout" / "servers"
    folder.mkdir(parents=True)
    (folder / "helper.py").write_text("GREETING = 'echo: '\n")
    (folder / "server.py").write_text(Path(FAULTY).read_text())
    workspace = tmp_path / "project"
    workspace.mkdir()
    config = McpServerConfig(command=sys.executable, args=[str(folder / "server.py"), "ok"])
    conn = McpConnection("faulty", config, lambda: stdio_launch(
        "faulty", config, SandboxSettings(), Workspace([workspace]), secret_env=None))
    try:
        await conn.start()
        assert conn.note.startswith("sandboxed")
        assert (await conn.call("echo", {"text": "hi"})).content[0].text == "echo: hi"
        shown = await conn.call("read", {"path": str(folder / "helper.py")})
        assert "GREETING" in shown.content[0].text  # its own folder is shown
        (tmp_path / "checkout" / "secret.txt").write_text("a neighbour's file")
        outside = await conn.call("read", {"path": str(tmp_path / "checkout" / "secret.txt")})
        assert "No such file" in outside.content[0].text  # not the folder above
    finally:
        await conn.aclose()


def test_argument_paths_show_what_the_arguments_name_and_refuse_credentials(
        tmp_path: Path) -> None:
    from agentls.sandbox.bwrap import ArgumentRefused, argument_paths

    home = tmp_path / "home"
    (home / "srv").mkdir(parents=True)
    (home / "srv" / "server.js").write_text("")
    (home / "conf.json").write_text("{}")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("key")
    environ = {"HOME": str(home)}
    paths = argument_paths(["--stdio", str(home / "srv" / "server.js"),
                            f"--config={home / 'conf.json'}", "stdio", "missing.py"],
                           tmp_path, environ)
    assert paths == [str(home / "srv" / "server.js"), str(home / "srv"),
                     str(home / "conf.json")]  # never the whole home for a file in it
    assert argument_paths(["/usr/bin/env"], tmp_path, environ) == []  # visible as it is
    with pytest.raises(ArgumentRefused, match="credentials"):
        argument_paths([str(home / ".ssh" / "id_rsa")], tmp_path, environ)
