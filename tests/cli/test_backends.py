"""`agentls backends` as a person runs it: model servers probed, agent CLIs detected."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli.headless_helpers import agentls_on_terminal
from tests.unit.llm import standin_agent_cli as standins

from agentls.devtools.replay.command import ReplayServer

PLANTED = "sk-backends-planted-secret-0123456789"




def agentls(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "agentls", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, check=False, timeout=60)


@pytest.fixture
def keyed_server() -> Iterator[ReplayServer]:
    with ReplayServer({"api_key": PLANTED, "models": ["scripted-model"], "steps": []}) as server:
        yield server


@pytest.fixture
def other_models_server() -> Iterator[ReplayServer]:
    with ReplayServer({"models": ["other-model", "third-model"], "steps": []}) as server:
        yield server


@pytest.fixture
def hanging_url() -> Iterator[str]:
    """A server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


@pytest.fixture
def refused_url() -> str:
    """A port nothing listens on."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}/v1"


def base_env(bin_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLS_", "OPENAI_"))}
    return {**env, "PATH": str(bin_dir), **extra}


def servers_env(*, openai: str, ollama: str, vllm: str, llamacpp: str) -> dict[str, str]:
    return {
        "AGENTLS_BACKENDS__OPENAI__BASE_URL": openai,
        "AGENTLS_BACKENDS__OLLAMA__BASE_URL": ollama,
        "AGENTLS_BACKENDS__VLLM__BASE_URL": vllm,
        "AGENTLS_BACKENDS__LLAMACPP__BASE_URL": llamacpp,
    }


SNAPSHOT: dict[str, Any] = {
    "schema": 1,
    "active": "scripted",
    "available": ["scripted", "codex"],
    "backends": [
        {"name": "openai", "kind": "openai-compatible", "type": "openai",
         "status": "unauthenticated",
         "detail": "HTTP 401: Incorrect API key provided. You can find your API key at "
                   "https://platform.openai.com/account/api-keys. (OPENAI_API_KEY is not set)",
         "model": "gpt-4o-mini", "url": "<keyed>", "active": False,
         "next": "set OPENAI_API_KEY to a valid API key for this server"},
        {"name": "ollama", "kind": "openai-compatible", "type": "openai",
         "status": "model-missing",
         "detail": "model 'qwen2.5-coder' is not served here (serves: other-model, third-model)",
         "model": "qwen2.5-coder", "url": "<other>", "active": False,
         "next": "agentls config set backends.ollama.model other-model"},
        {"name": "vllm", "kind": "openai-compatible", "type": "openai", "status": "unreachable",
         "detail": "timed out after <s> s", "model": "Qwen/Qwen2.5-Coder-7B", "url": "<hanging>",
         "active": False,
         "next": "start the server, or point agentls at it: agentls config set "
                 "backends.vllm.base_url URL"},
        {"name": "llamacpp", "kind": "openai-compatible", "type": "openai",
         "status": "unreachable", "detail": "<refused>", "model": "default", "url": "<refused>",
         "active": False,
         "next": "start the server, or point agentls at it: agentls config set "
                 "backends.llamacpp.base_url URL"},
        {"name": "scripted", "kind": "openai-compatible", "type": "openai",
         "status": "available", "detail": "serves scripted-model", "model": "scripted-model",
         "url": "<keyed>", "active": True, "next": None},
        {"name": "codex", "kind": "agent-cli", "type": "codex", "status": "available",
         "detail": "Logged in using an API key (<bin>/codex)", "model": None, "url": None,
         "active": False, "next": None},
        {"name": "copilot", "kind": "agent-cli", "type": "copilot", "status": "missing",
         "detail": "`copilot` is not on PATH", "model": None, "url": None, "active": False,
         "next": "install it: npm install -g @github/copilot"},
        {"name": "claude", "kind": "agent-cli", "type": "claude", "status": "unauthenticated",
         "detail": "not signed in", "model": None, "url": None, "active": False,
         "next": "run `claude` and sign in with /login, or set ANTHROPIC_API_KEY"},
        {"name": "gemini", "kind": "agent-cli", "type": "gemini", "status": "unsupported",
         "detail": "Gemini CLI is installed (<bin>/gemini) but agentls has no adapter for it",
         "model": None, "url": None, "active": False,
         "next": "use codex, copilot or claude, or a model server"},
    ],
}


def test_json_listing_matches_the_snapshot(
    tmp_path: Path, keyed_server: ReplayServer, other_models_server: ReplayServer,
    hanging_url: str, refused_url: str,
) -> None:
    bin_dir = standins.install_standins(tmp_path / "bin",
                                        {"codex": "ok", "claude": "unauthenticated",
                                         "gemini": "ok"})
    env = base_env(
        bin_dir,
        **servers_env(openai=keyed_server.base_url, ollama=other_models_server.base_url,
                      vllm=hanging_url, llamacpp=refused_url),
        AGENTLS_BACKENDS__SCRIPTED__BASE_URL=keyed_server.base_url,
        AGENTLS_BACKENDS__SCRIPTED__MODEL="scripted-model",
        AGENTLS_BACKENDS__SCRIPTED__API_KEY_ENV="SCRIPTED_KEY",
        AGENTLS_BACKEND="scripted",
        SCRIPTED_KEY=PLANTED,
    )
    done = agentls("backends", "--json", env=env, cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    urls = {keyed_server.base_url: "<keyed>", other_models_server.base_url: "<other>",
            hanging_url: "<hanging>", refused_url: "<refused>"}
    for entry in listing["backends"]:
        entry["url"] = urls.get(entry["url"], entry["url"])
        entry["detail"] = re.sub(r"timed out after [\d.]+ s", "timed out after <s> s",
                                 entry["detail"]).replace(str(bin_dir), "<bin>")
        if entry["name"] == "llamacpp":
            assert entry["detail"].startswith("cannot connect")
            entry["detail"] = "<refused>"
    assert listing == SNAPSHOT

    # The key reached only the server that was meant to get it, never a CLI.
    for call in standins.calls(bin_dir):
        assert PLANTED not in json.dumps(call)
        assert "SCRIPTED_KEY" not in call["env"]
    assert PLANTED not in done.stdout + done.stderr


def test_human_table_says_what_to_do(tmp_path: Path, keyed_server: ReplayServer,
                                     refused_url: str) -> None:
    bin_dir = standins.install_standins(tmp_path / "bin", {"claude": "ok"})
    env = base_env(bin_dir, **servers_env(openai=refused_url, ollama=refused_url,
                                          vllm=refused_url, llamacpp=refused_url))
    done = agentls("backends", env=env, cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    # piped: one line per backend, name<TAB>active<TAB>type<TAB>status<TAB>model<TAB>detail<TAB>next
    rows = {line.split("\t")[0]: line.split("\t") for line in done.stdout.splitlines()}
    assert all(len(row) == 7 for row in rows.values()), done.stdout
    assert rows["claude"][3] == "available" and "signed in (claude.ai)" in rows["claude"][5]
    assert rows["codex"][3] == "missing" and "npm install -g @openai/codex" in rows["codex"][6]
    assert rows["openai"][1] == "active" and rows["openai"][3] == "unreachable"
    assert "backends.openai.base_url" in rows["openai"][6]
    shown = agentls_on_terminal("backends", env=env, cwd=tmp_path, columns=160).stdout
    openai = next(line for line in shown.splitlines() if line.startswith("openai *"))
    assert "unreachable" in openai and "backends.openai.base_url" in shown  # folded cells
    assert "no backend detected" not in done.stderr


def test_no_backend_detected_exits_2(tmp_path: Path, hanging_url: str,
                                     refused_url: str) -> None:
    bin_dir = standins.install_standins(tmp_path / "bin", {"codex": "unauthenticated",
                                                           "claude": "hang"})
    env = base_env(bin_dir, **servers_env(openai=hanging_url, ollama=refused_url,
                                          vllm=hanging_url, llamacpp=refused_url))
    done = agentls("backends", "--json", env=env, cwd=tmp_path)

    assert done.returncode == 2
    assert "no backend detected" in done.stderr
    listing = json.loads(done.stdout)
    assert listing["available"] == []
    statuses = {b["name"]: (b["status"], b["detail"]) for b in listing["backends"]}
    assert statuses["openai"][0] == "unreachable" and "timed out" in statuses["openai"][1]
    assert statuses["codex"] == ("unauthenticated", "Not logged in")
    assert statuses["claude"][0] == "unauthenticated"
    assert "did not answer" in statuses["claude"][1]


def test_configured_cli_backends_are_listed_under_their_names(
        tmp_path: Path, refused_url: str) -> None:
    bin_dir = standins.install_standins(tmp_path / "bin", {"codex": "ok"})
    (tmp_path / ".agentls").mkdir()
    (tmp_path / ".agentls" / "config.toml").write_text(
        '[backends.review]\ntype = "codex"\nmodel = "gpt-5-codex"\n')
    env = base_env(bin_dir, **servers_env(openai=refused_url, ollama=refused_url,
                                          vllm=refused_url, llamacpp=refused_url))
    done = agentls("backends", "--json", env=env, cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    entries = {b["name"]: b for b in json.loads(done.stdout)["backends"]}
    assert "codex" not in entries
    assert (entries["review"]["type"], entries["review"]["status"],
            entries["review"]["model"]) == ("codex", "available", "gpt-5-codex")


def test_invalid_configuration_is_reported(tmp_path: Path) -> None:
    (tmp_path / ".agentls").mkdir()
    (tmp_path / ".agentls" / "config.toml").write_text('[backends.x]\ntype = "gemini"\n')
    done = agentls("backends", env=base_env(tmp_path), cwd=tmp_path)
    assert done.returncode == 78
    assert "backends.x.type" in done.stderr


def test_the_sandbox_state_is_listed() -> None:
    from agentls.cli.backends_cmd import sandbox_line
    from agentls.sandbox.bwrap import SandboxSettings, probe
    from agentls.settings.config import Settings

    line = sandbox_line(Settings())
    if probe().available:
        assert line.startswith("sandbox: available (bwrap ") and line.endswith("no network")
    assert "unsafe" in sandbox_line(Settings(sandbox=SandboxSettings(mode="off")))
