"""Tests for server/agentls/tools/shell/shell_exec.py: real subprocesses in a real workspace."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from agentls.tools.shell.shell_exec import scrubbed_environment, shell_exec
from agentls.workspace.fence import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "sub").mkdir()
    (tmp_path / "file.txt").write_text("hello\n")
    (tmp_path / ".git").mkdir()
    return Workspace([tmp_path])


def is_gone(pid: int) -> bool:
    """Gone or a zombie (nothing may reap orphans in a container, but they are dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state == "Z"


async def wait_until(condition: Callable[[], bool]) -> bool:
    """Poll for a condition (not a timing assertion: it only bounds a hang)."""
    for _ in range(500):
        if condition():
            return True
        await asyncio.sleep(0.02)
    return condition()


async def test_exit_code_and_both_streams(ws: Workspace) -> None:
    result = await shell_exec(ws, "echo out; echo err >&2; exit 3")
    assert result["ok"] is True
    assert result["exit_code"] == 3
    assert result["stdout"] == "out\n"
    assert result["stderr"] == "err\n"
    assert result["timed_out"] is False
    assert result["duration_s"] >= 0


async def test_success_and_shell_features(ws: Workspace) -> None:
    result = await shell_exec(ws, "for i in 1 2 3; do printf $i; done && cat file.txt")
    assert result["exit_code"] == 0
    assert result["stdout"] == "123hello\n"


async def test_runs_in_the_first_root_by_default(ws: Workspace) -> None:
    result = await shell_exec(ws, "pwd")
    assert Path(result["stdout"].strip()).resolve() == ws.roots[0]
    assert result["cwd"] == "."


async def test_cwd_inside_the_workspace(ws: Workspace) -> None:
    result = await shell_exec(ws, "pwd", cwd="sub")
    assert Path(result["stdout"].strip()).resolve() == ws.roots[0] / "sub"
    assert result["cwd"] == "sub"


@pytest.mark.parametrize(
    ("cwd", "code"),
    [
        ("..", "OUTSIDE_WORKSPACE"),
        ("/", "OUTSIDE_WORKSPACE"),
        ("sub/../../..", "OUTSIDE_WORKSPACE"),
        (".git", "DENIED"),
        ("file.txt", "NOT_A_DIRECTORY"),
        ("missing", "NOT_A_DIRECTORY"),
    ],
)
async def test_cwd_outside_or_invalid_is_refused(ws: Workspace, cwd: str, code: str) -> None:
    marker = ws.roots[0] / "ran"
    result = await shell_exec(ws, f"touch {marker}", cwd=cwd)
    assert result["ok"] is False
    assert result["error"] == code
    assert result["message"]
    assert not marker.exists()


async def test_empty_command(ws: Workspace) -> None:
    result = await shell_exec(ws, "   ")
    assert result["error"] == "EMPTY_COMMAND"


async def test_timeout_kills_the_whole_process_group(ws: Workspace) -> None:
    result = await shell_exec(ws, "sleep 100 & echo $!; sleep 100; wait", timeout=1)
    assert result["ok"] is False
    assert result["error"] == "TIMEOUT"
    assert result["timed_out"] is True
    assert "600" in result["message"]
    grandchild = int(result["stdout"].split()[0])
    assert await wait_until(lambda: is_gone(grandchild))
    assert result["exit_code"] is not None and result["exit_code"] < 0
    assert result["signal"] in ("SIGTERM", "SIGKILL")


async def test_timeout_escalates_to_sigkill(ws: Workspace) -> None:
    command = "trap '' TERM; sleep 100 & echo $!; while :; do sleep 1; done"
    result = await shell_exec(ws, command, timeout=1)
    assert result["timed_out"] is True
    grandchild = int(result["stdout"].split()[0])
    assert await wait_until(lambda: is_gone(grandchild))


async def test_background_processes_are_stopped_when_the_command_ends(ws: Workspace) -> None:
    result = await shell_exec(ws, "sleep 100 >/dev/null 2>&1 & echo $!")
    assert result["ok"] is True and result["exit_code"] == 0
    background = int(result["stdout"].strip())
    assert await wait_until(lambda: is_gone(background))


async def test_a_detached_process_holding_the_output_does_not_hang_us(ws: Workspace) -> None:
    # It leaves our process group before the command ends (then it is out of our reach).
    command = (
        "setsid sh -c 'touch ready; exec sleep 30' & while [ ! -e ready ]; do :; done; echo $!"
    )
    result = await shell_exec(ws, command)
    detached = int(result["stdout"].split()[0])
    try:
        assert result["ok"] is True
        assert any("detached" in note for note in result["notes"])
    finally:
        os.kill(detached, signal.SIGKILL)


async def test_cancellation_kills_the_process_group(ws: Workspace) -> None:
    pid_file = ws.roots[0] / "pid.txt"
    task = asyncio.create_task(
        shell_exec(ws, f"sleep 100 & echo $! > {pid_file}; wait", timeout=600)
    )
    assert await wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "")
    grandchild = int(pid_file.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_until(lambda: is_gone(grandchild))


@pytest.mark.parametrize(("given", "used"), [(10_000, 600), (0, 1), (-5, 1)])
async def test_timeout_is_clamped_with_a_note(ws: Workspace, given: float, used: int) -> None:
    result = await shell_exec(ws, "true", timeout=given)
    assert result["ok"] is True
    assert f"used {used} s" in result["notes"][0]


async def test_environment_has_no_secrets(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = {
        "FAKE_API_KEY": "k1",
        "GITHUB_TOKEN": "t1",
        "aws_secret_access_key": "s1",
        "DB_PASSWORD": "p1",
        "MY_LLM_CREDS": "c1",
    }
    for name, value in planted.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AGENTLS_TEST_VISIBLE", "yes")
    result = await shell_exec(ws, "env", api_key_env="MY_LLM_CREDS")
    names = {line.split("=", 1)[0] for line in result["stdout"].splitlines()}
    assert "AGENTLS_TEST_VISIBLE" in names
    assert not names & set(planted)
    for value in planted.values():
        assert f"={value}\n" not in result["stdout"]


def test_scrubbed_environment_is_case_insensitive() -> None:
    env = {"PATH": "/bin", "my_token": "x", "Secret_Thing": "y", "OPENAI_API_KEY": "z",
           "CUSTOM": "w"}
    assert scrubbed_environment(env, "CUSTOM") == {"PATH": "/bin"}


async def test_long_output_keeps_head_and_tail(ws: Workspace) -> None:
    result = await shell_exec(ws, "seq 1 100000", output_limit=1000)
    out = result["stdout"]
    assert out.startswith("1\n2\n3\n")
    assert out.endswith("99999\n100000\n")
    assert "characters omitted" in out
    assert len(out) < 2100  # 1,000 characters each side and the marker


async def test_truncation_counts_the_omitted_characters(ws: Workspace) -> None:
    result = await shell_exec(ws, "head -c 30000 /dev/zero | tr '\\0' a", output_limit=1000)
    out = result["stdout"]
    assert out == "a" * 1000 + "\n[... 28000 characters omitted ...]\n" + "a" * 1000


async def test_huge_output_is_streamed_not_buffered(ws: Workspace) -> None:
    result = await shell_exec(ws, "yes 0123456789 | head -c 20000000; echo; echo END",
                              output_limit=100)
    assert result["exit_code"] == 0
    assert result["stdout"].endswith("END\n")
    assert len(result["stdout"]) < 300


async def test_short_output_is_untouched(ws: Workspace) -> None:
    result = await shell_exec(ws, "printf 'x%.0s' $(seq 1 1999)", output_limit=1000)
    assert result["stdout"] == "x" * 1999


async def test_invalid_utf8_is_replaced(ws: Workspace) -> None:
    result = await shell_exec(ws, "printf 'ok \\377\\376 done'")
    assert result["stdout"] == "ok \ufffd\ufffd done"


async def test_stdin_is_closed(ws: Workspace) -> None:
    result = await shell_exec(ws, "cat; echo after", timeout=5)
    assert result["ok"] is True
    assert result["stdout"] == "after\n"
