"""shell_exec in the bwrap sandbox over the shadow workspace: what a hostile command cannot
do, what the agent's own commands see, and how their writes join the ChangeSet."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentls.sandbox.bwrap import UNAVAILABLE_SWITCH, SandboxSettings, probe
from agentls.tools.permission_gate import PermissionPolicy, check
from agentls.tools.shell.sandboxed import ShellSandbox
from agentls.workspace.fence import Workspace

SECRET = "sk-sandbox-planted-secret-4242"
NO_SANDBOX = not probe().available
pytestmark = pytest.mark.skipif(NO_SANDBOX, reason=f"no sandbox here: {probe().describe()}")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    (root / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    (root / "server.key").write_text(SECRET)
    (root / ".gitignore").write_text("__pycache__/\n.pytest_cache/\nbuild/\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    return home


@pytest.fixture
def sandbox(home: Path) -> ShellSandbox:
    environ = {"PATH": os.environ["PATH"], "HOME": str(home), "OPENAI_API_KEY": SECRET,
               "MY_TOKEN": SECRET}
    return ShellSandbox(SandboxSettings(), "test", environ=environ)


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for base, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".agentls", ".git")]
        for name in files:
            path = Path(base) / name
            out[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mode)
    return out


async def sh(sandbox: ShellSandbox, ws: Workspace, command: str) -> dict[str, Any]:
    return await sandbox.run(ws, command, None, 30, api_key_env="OPENAI_API_KEY",
                             output_limit=20_000)


class Listener:
    """A TCP server on the host's loopback that counts connections."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.hits += 1
            conn.close()

    def close(self) -> None:
        self._stop = True
        self.thread.join()
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


NETWORK_BYPASSES = [
    "curl -sS -m 3 http://127.0.0.1:{port}/",
    "$'\\x63url' -sS -m 3 http://127.0.0.1:{port}/",
    "X=curl; $X -sS -m 3 http://127.0.0.1:{port}/",
    "$(echo curl) -sS -m 3 http://127.0.0.1:{port}/",
    "find . -maxdepth 0 -exec curl -sS -m 3 http://127.0.0.1:{port}/ \\;",
    "bash <<< 'curl -sS -m 3 http://127.0.0.1:{port}/'",
    "echo 'curl -sS -m 3 http://127.0.0.1:{port}/' | sh",
    "{python} -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:{port}/', timeout=3)\"",
    "echo hi > /dev/tcp/127.0.0.1/{port}",
]


@pytest.mark.parametrize("template", NETWORK_BYPASSES)
async def test_nothing_reaches_the_network(project: Path, sandbox: ShellSandbox,
                                           listener: Listener, template: str) -> None:
    command = template.format(port=listener.port, python=sys.executable)
    result = await sh(sandbox, Workspace([project]), command)
    assert result["exit_code"] != 0 or "curl: (7)" in result["stderr"], result  # find: exit 0
    assert listener.hits == 0


async def test_no_key_in_env_proc_or_files(project: Path, sandbox: ShellSandbox) -> None:
    ws = Workspace([project])
    result = await sh(sandbox, ws, "echo $OPENAI_API_KEY $MY_TOKEN; env; "
                      "cat /proc/*/environ; cat /proc/1/cmdline; cat .env server.key; "
                      "grep -r sk- . ~ 2>/dev/null")
    everything = result["stdout"] + result["stderr"]
    assert SECRET not in everything
    assert "HOME=/tmp/home" in everything
    listing = (await sh(sandbox, ws, "ls -a"))["stdout"].split()
    assert ".env" not in listing and "server.key" not in listing and ".agentls" not in listing


async def test_hidden_files_read_as_absent(project: Path, sandbox: ShellSandbox) -> None:
    result = await sh(sandbox, Workspace([project]), "test -e .env || echo absent; cat .env")
    assert result["stdout"] == "absent\n" and "No such file" in result["stderr"]


async def test_destruction_stays_inside(project: Path, home: Path, sandbox: ShellSandbox,
                                        tmp_path: Path) -> None:
    before = snapshot(project)
    ws = Workspace([project])
    outside = tmp_path / "outside.txt"
    result = await sh(sandbox, ws, f"rm -Rf ~ {home} 2>&1; chmod a+rwx calc.py; "
                      f"dd if=/dev/zero of=/etc/agentls-test bs=1 count=1 2>&1; "
                      f"echo x > {outside}; echo x > /usr/agentls-test; rm -rf .git; "
                      f"git -c alias.x='!touch {outside}' x")
    assert result["ok"]
    assert (home / ".ssh" / "id_rsa").read_text() == SECRET
    assert not outside.exists() and not Path("/etc/agentls-test").exists()
    assert (project / ".git").is_dir()
    assert snapshot(project) == before
    assert ws.changeset.is_empty()  # a mode change alone is no change to the content


async def test_the_shell_sees_pending_edits_and_the_disk_stays(
        project: Path, sandbox: ShellSandbox) -> None:
    ws = Workspace([project])
    ws.stage_write(ws.resolve("calc.py"), "def add(a, b):\n    return a + b\n")
    before = snapshot(project)
    result = await sh(sandbox, ws, f"{sys.executable} -m pytest -q test_calc.py")
    assert result["exit_code"] == 0, result["stdout"]
    assert "1 passed" in result["stdout"]
    assert snapshot(project) == before
    # The test run's caches are ignored: in scratch, never in the ChangeSet.
    assert [c.path.name for c in ws.changeset.changes()] == ["calc.py"]
    assert any(p.startswith((".pytest_cache", "__pycache__"))
               for p in result.get("kept_in_scratch", []))
    again = await sh(sandbox, ws, "ls -a")
    assert ".pytest_cache" in again["stdout"].split()  # caches persist within the session


async def test_writes_fold_into_the_changeset(project: Path, sandbox: ShellSandbox) -> None:
    ws = Workspace([project])
    (project / "old.txt").write_text("moving\n")
    result = await sh(sandbox, ws, "echo new > new.txt; echo '# more' >> calc.py; "
                      "rm test_calc.py; mv old.txt moved.txt; mkdir -p build; "
                      "echo out > build/out.bin")
    kinds = {(c["path"], c["kind"]) for c in result["changes"]}
    assert kinds == {("new.txt", "create"), ("calc.py", "update"),
                     ("test_calc.py", "delete"), ("moved.txt", "rename")}
    changes = {c.path.name: c.kind for c in ws.changeset.changes()}
    assert changes == {"new.txt": "create", "calc.py": "update", "test_calc.py": "delete",
                       "moved.txt": "rename"}
    assert ws.changeset.current_text(project / "calc.py") == (
        "def add(a, b):\n    return a - b\n# more\n")
    assert "build/out.bin" in result["kept_in_scratch"] or "build" in result["kept_in_scratch"]
    assert not (project / "new.txt").exists() and (project / "test_calc.py").exists()
    # The next command sees the folded state through the pending layer.
    after = await sh(sandbox, ws, "cat new.txt moved.txt; test -e test_calc.py || echo gone")
    assert after["stdout"] == "new\nmoving\ngone\n"
    # An agent edit after the shell's write wins over the shell's old copy.
    ws.stage_write(ws.resolve("new.txt"), "edited by the agent\n")
    assert (await sh(sandbox, ws, "cat new.txt"))["stdout"] == "edited by the agent\n"


async def test_a_folder_removed_and_made_again(project: Path, sandbox: ShellSandbox) -> None:
    (project / "src").mkdir()
    (project / "src" / "a.py").write_text("a\n")
    (project / "src" / "b.py").write_text("b\n")
    ws = Workspace([project])
    await sh(sandbox, ws, "rm -rf src && mkdir src && echo c > src/c.py")
    changes = {c.path.name: c.kind for c in ws.changeset.changes()}
    assert changes == {"a.py": "delete", "b.py": "delete", "c.py": "create"}
    assert (await sh(sandbox, ws, "ls src"))["stdout"] == "c.py\n"


async def test_a_tool_under_tmp_stays_runnable(project: Path, home: Path,
                                               tmp_path: Path) -> None:
    """The private /tmp covers the host's; a read path under it (a venv in a CI checkout
    under /tmp) is bound back read-only, and nothing else of the host's /tmp shows."""
    assert str(tmp_path).startswith("/tmp/")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "hello").write_text("#!/bin/sh\necho hello from tmp\n")
    (tools / "hello").chmod(0o755)
    (tmp_path / "other.txt").write_text("not for the sandbox\n")
    sandbox = ShellSandbox(SandboxSettings(read_paths=[str(tools)]), "tmp",
                           environ={"PATH": os.environ["PATH"], "HOME": str(home)})
    result = await sh(sandbox, Workspace([project]),
                      f"{tools}/hello; touch {tools}/x 2>&1; cat {tmp_path}/other.txt 2>&1")
    assert result["stdout"].startswith("hello from tmp\n"), result
    assert "Read-only file system" in result["stdout"]
    assert "not for the sandbox" not in result["stdout"]
    assert not (tools / "x").exists()


async def test_time_limit_stops_everything(project: Path, sandbox: ShellSandbox) -> None:
    result = await sandbox.run(Workspace([project]), "sleep 30 & sleep 30", None, 1,
                               api_key_env="OPENAI_API_KEY", output_limit=1000)
    assert result["error"] == "TIMEOUT"


async def test_memory_limit_is_reported(project: Path, home: Path) -> None:
    sandbox = ShellSandbox(SandboxSettings(memory_mb=200), "mem",
                           environ={"PATH": os.environ["PATH"], "HOME": str(home)})
    result = await sh(sandbox, Workspace([project]),
                      f"{sys.executable} -c \"b = bytearray(400 * 1024 * 1024)\"")
    assert result["exit_code"] != 0 and "MemoryError" in result["stderr"]
    assert any("memory limit (200 MiB" in note for note in result["notes"])


async def test_network_setting_lets_commands_connect(project: Path, home: Path,
                                                     listener: Listener) -> None:
    sandbox = ShellSandbox(SandboxSettings(network=True), "net",
                           environ={"PATH": os.environ["PATH"], "HOME": str(home)})
    result = await sh(sandbox, Workspace([project]),
                      f"curl -sS -m 3 http://127.0.0.1:{listener.port}/ ; true")
    assert listener.hits == 1, result
    assert sandbox.mode().note == "sandboxed: network on, writes shown as a diff"


# --- permissions and fallbacks ----------------------------------------------------------------


async def test_sandboxed_commands_need_no_approval_but_the_deny_list_stays(
        sandbox: ShellSandbox) -> None:
    policy = PermissionPolicy()
    mode = sandbox.mode()
    plain = await check(policy, "shell_exec", {"command": "make build"}, None, shell_mode=mode)
    assert plain.permission == "allow"
    assert plain.reason == "sandboxed: no network, writes shown as a diff"
    denied = await check(policy, "shell_exec", {"command": "sudo ls"}, None, shell_mode=mode)
    assert denied.permission == "deny"


def unavailable(mode: str, home: Path) -> ShellSandbox:
    environ = {"PATH": os.environ["PATH"], "HOME": str(home), UNAVAILABLE_SWITCH: "test"}
    return ShellSandbox(SandboxSettings(mode=mode), "fallback", environ=environ)  # type: ignore[arg-type]


async def test_auto_without_a_sandbox_asks_every_command_and_says_why(
        project: Path, home: Path) -> None:
    sandbox = unavailable("auto", home)
    asked: list[str] = []

    async def confirm(request: Any) -> Any:
        asked.append(f"{request.title}\n{request.reason}")
        return "allow_once"

    for command in ("ls", "git status"):  # on the allow list, asked all the same
        decision = await check(PermissionPolicy(), "shell_exec", {"command": command},
                               confirm, shell_mode=sandbox.mode())
        assert decision.permission == "allow"
    assert len(asked) == 2 and "not sandboxed (disabled by AGENTLS_SANDBOX_UNAVAILABLE" in asked[0]
    warnings: list[str] = []
    sandbox.notify = warnings.append
    result = await sh(sandbox, Workspace([project]), "echo direct")
    await sh(sandbox, Workspace([project]), "echo again")
    assert result["stdout"] == "direct\n" and result["sandbox"].startswith("not sandboxed")
    # The model was told commands see its pending changes; this one says it does not.
    assert result["sandbox"].endswith("your pending changes are not in them")
    assert len(warnings) == 1 and "ask before every command" in warnings[0]
    assert "Fix: unset AGENTLS_SANDBOX_UNAVAILABLE" in warnings[0]


async def test_required_without_a_sandbox_refuses(project: Path, home: Path) -> None:
    sandbox = unavailable("required", home)
    decision = await check(PermissionPolicy(), "shell_exec", {"command": "ls"}, None,
                           shell_mode=sandbox.mode())
    assert decision.permission == "deny" and "sandbox.mode = required" in decision.reason
    result = await sh(sandbox, Workspace([project]), "touch made.txt")
    assert result["error"] == "SANDBOX_UNAVAILABLE" and not (project / "made.txt").exists()


async def test_secrets_made_during_the_session_are_hidden_too(
        project: Path, sandbox: ShellSandbox) -> None:
    ws = Workspace([project])
    assert (await sh(sandbox, ws, "ls -a"))["ok"]
    (project / "sub").mkdir()
    (project / "sub" / ".env.local").write_text(SECRET)
    (project / "id_rsa").write_text(SECRET)
    result = await sh(sandbox, ws, "cat sub/.env.local id_rsa; ls -a sub")
    assert SECRET not in result["stdout"] and ".env.local" not in result["stdout"]


GIT_TOKEN = "ghp_plantedToken0123456789abcdef"


async def test_git_credentials_are_not_readable_and_git_still_works(
        project: Path, sandbox: ShellSandbox) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)

    git("-c", "user.name=t", "-c", "user.email=t@t", "add", "calc.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first commit")
    git("remote", "add", "origin", f"https://someone:{GIT_TOKEN}@github.com/o/r.git")
    git("config", "http.https://github.com/.extraheader",
        f"AUTHORIZATION: basic {GIT_TOKEN}")
    git("config", "url.https://x-access-token:" + GIT_TOKEN + "@github.com/.insteadOf",
        "https://github.com/")
    included = project / ".git" / "extra.cfg"  # an included file, inside .git
    included.write_text(f'[credential]\n\thelper = "!f() {{ echo password={GIT_TOKEN}; }}; f"\n'
                        f'[http]\n\textraHeader = X-Token: \\\n\t{GIT_TOKEN}\n'
                        "[core]\n\tabbrev = 9\n")
    outside = project / "team.gitconfig"  # and one outside .git
    outside.write_text(f"[github]\n\ttoken = {GIT_TOKEN}\n[alias]\n\tst = status\n")
    git("config", "--add", "include.path", str(included))
    git("config", "--add", "include.path", str(outside))
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    ws = Workspace([project])

    result = await sh(sandbox, ws, f"cat .git/config .git/extra.cfg {outside}; "
                      "git config --list --show-origin; git remote -v")
    assert result["exit_code"] == 0, result
    shown = result["stdout"] + result["stderr"]
    assert GIT_TOKEN not in shown
    assert "https://github.com/o/r.git" in shown  # the URL stays, without its user part
    assert "abbrev = 9" in shown and "st = status" in shown  # the rest of the config stays
    assert "extraheader" not in shown.lower() and "[credential" not in shown
    assert "helper" not in shown and "token" not in shown

    result = await sh(sandbox, ws, "git status --short; git diff; git log --oneline; git st")
    assert result["exit_code"] == 0, result
    assert " M calc.py" in result["stdout"] and "+    return a + b" in result["stdout"]
    assert "first commit" in result["stdout"]
    assert GIT_TOKEN in (project / ".git" / "config").read_text()  # the host's file untouched
