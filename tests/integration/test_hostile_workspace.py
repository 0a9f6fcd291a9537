"""Opening or searching a repository never runs its code (issue 36, docs/SECURITY.md).

One workspace is full of files named like standard modules, like the worker's libraries and
like AgentLS itself, each writing a marker (outside the workspace) if it is ever imported.
Each front door is started there as a person or an editor starts it, and searches it with
the local re-ranking model: `agentls index`, `agentls search`, `agentls serve` as the VS Code
extension's fallback starts it with a chat whose scripted model (agentls.devtools, not a real
model) calls search_semantic, `agentls acp` as the README's recipe starts it through Python,
and `agentls run`. No marker appears, and the embedding worker really runs: a process watcher
sees it under the front door (with ``-P``, outside the workspace), and the search says it was
re-ranked or carries no fallback warning. Trees shaped like aiohttp's and fastapi's (a
``types.py`` and an ``http.py`` on top) re-rank instead of falling back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.acp.acp_helpers import RecordingClient
from tests.acp.acp_helpers import scripted_env as acp_env
from tests.cli.headless_helpers import scripted_env
from tests.lsp.conftest import options_for
from tests.lsp.raw_client import RawClient

import acp
from agentls.devtools.replay.command import ReplayServer
from agentls.index.embedding import EmbeddingError, minilm_path

try:
    minilm_path()
except EmbeddingError:
    pytest.skip("agentls[local] is not installed: there is no worker to start",
                allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
AGENTLS = str(Path(sys.executable).parent / "agentls")  # the command, as a shell finds it
SHADOWS = ("types", "json", "enum", "typing", "http", "os", "site", "sitecustomize",
           "usercustomize", "numpy", "torch", "sentence_transformers")
QUERY = "where do we wait before trying again after the server says too many requests"
WAIT_S = 180.0  # the model loads in its worker: seconds on 2 busy cores, not a speed target


def vscode_fallback() -> list[str]:
    """The VS Code extension's start when `agentls` is not on PATH, read from its source."""
    source = (REPO / "clients/vscode/src/pure/python_start.ts").read_text(encoding="utf-8")
    found = re.search(r"PYTHON_SERVE_ARGS = (\[[^\]]*\])", source)
    assert found, "clients/vscode/src/pure/python_start.ts lost PYTHON_SERVE_ARGS"
    return [sys.executable, *json.loads(found.group(1))]


class Hostile:
    def __init__(self, root: Path, marks: Path) -> None:
        self.root, self.marks = root, marks

    def markers(self) -> list[str]:
        return sorted(p.name for p in self.marks.iterdir())


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    marks = tmp_path_factory.mktemp("marks")
    root = tmp_path_factory.mktemp("hostile")

    def trap(path: Path, name: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"open({str(marks / name)!r}, 'w').write('imported')\n")

    for name in SHADOWS:
        trap(root / f"{name}.py", name)
    trap(root / "agentls" / "__init__.py", "agentls")
    trap(root / "agentls" / "__main__.py", "agentls.__main__")
    (root / "src").mkdir()
    (root / "src" / "throttle.py").write_text(
        "def backoff_after_rate_limit(response):\n"
        "    '''Sleep for the Retry-After seconds of a 429 answer, then call again.'''\n"
        "    delay = float(response.headers.get('retry-after', 1))\n"
        "    return delay\n")
    (root / "src" / "cart.py").write_text(
        "def total_price(items):\n    return sum(i.price * i.count for i in items)\n")
    (root / "src" / "report.py").write_text(
        "def monthly_report(rows):\n    return '\\n'.join(str(r) for r in rows)\n")
    return Hostile(root, marks)


@contextlib.contextmanager
def watch_workers(pid: int) -> Iterator[list[tuple[list[str], str]]]:
    """(argv, working folder) of every embedding worker seen below process ``pid``."""
    seen: dict[int, tuple[list[str], str]] = {}
    stop = threading.Event()

    def parents() -> dict[int, int]:
        table = {}
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    stat = Path(f"/proc/{entry.name}/stat").read_text()
                    table[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        return table

    def poll() -> None:
        while not stop.wait(0.05):
            table = parents()
            below, grew = {pid}, True
            while grew:
                more = {child for child, parent in table.items() if parent in below}
                grew = not more <= below
                below |= more
            for child in below - {pid} - set(seen):
                with contextlib.suppress(OSError):
                    argv = Path(f"/proc/{child}/cmdline").read_bytes().decode().split("\0")
                    if any(a.endswith("embed_worker") for a in argv):
                        seen[child] = (argv[:-1], os.readlink(f"/proc/{child}/cwd"))

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    found: list[tuple[list[str], str]] = []
    try:
        yield found
    finally:
        stop.set()
        watcher.join()
        found.extend(seen.values())


def assert_safe_and_reranked(hostile: Hostile, workers: list[tuple[list[str], str]]) -> None:
    assert hostile.markers() == [], "workspace files ran inside AgentLS"
    assert workers, "no embedding worker ran: the search was not re-ranked"
    for argv, cwd in workers:
        assert argv[1] == "-P", argv
        assert not Path(cwd).resolve().is_relative_to(hostile.root.resolve()), cwd


def search_calls() -> list[dict[str, Any]]:
    return [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            {"id": "s1", "name": "search_semantic", "arguments": {"query": QUERY}}]}},
        {"match": {"tool": "search_semantic"}, "reply": {"text": "It is the backoff."}},
    ]


def search_result(model: ReplayServer) -> dict[str, Any]:
    """The search_semantic result the model was sent, checked: found, and not a fallback."""
    found: dict[str, Any] = next(
        json.loads(m["content"]) for r in model.requests for m in r.body.get("messages", ())
        if m["role"] == "tool" and m["tool_call_id"] == "s1")
    assert found["ok"] and found["mode"] == "hybrid", found
    assert "warning" not in found, found["warning"]
    assert found["results"][0]["symbol"] == "backoff_after_rate_limit", found
    return found


@pytest.fixture(autouse=True)
def rerank_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests watch the re-ranking worker start safely: re-ranking is opted in (off by
    default since issue 40)."""
    monkeypatch.setenv("AGENTLS_INDEX_RERANK", "auto")


def run_command(argv: list[str], cwd: Path, env: dict[str, str]
                ) -> tuple[subprocess.CompletedProcess[str], list[tuple[list[str], str]]]:
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    with watch_workers(process.pid) as workers:
        stdout, stderr = process.communicate(timeout=WAIT_S)
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr), workers


def test_agentls_index_with_the_local_model(hostile: Hostile) -> None:
    env = {**os.environ, "AGENTLS_INDEX__EMBEDDINGS": "local"}
    done, workers = run_command([AGENTLS, "index", "--rebuild"], hostile.root, env)
    assert done.returncode == 0, done.stderr
    assert "provider local" in done.stdout, done.stdout
    assert_safe_and_reranked(hostile, workers)


def test_agentls_search_reranks(hostile: Hostile) -> None:
    done, workers = run_command([AGENTLS, "search", QUERY, "--json"], hostile.root,
                                dict(os.environ))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["reranked_by"] == "local:all-MiniLM-L6-v2", result["warnings"]
    assert result["warnings"] == [] and result["results"][0]["path"] == "src/throttle.py"
    assert_safe_and_reranked(hostile, workers)


def test_serve_by_the_vscode_fallback_then_a_chat_that_searches(
        hostile: Hostile, server: ReplayServer) -> None:
    command = vscode_fallback()
    assert command[1:] == ["-P", "-m", "agentls", "serve"]
    server.load({"steps": search_calls()})
    client = RawClient(hostile.root, command=command)
    with watch_workers(client.proc.pid) as workers:
        try:
            answer = client.request("initialize", {
                "processId": None, "rootUri": hostile.root.as_uri(), "capabilities": {},
                "initializationOptions": options_for(server)})
            assert "result" in answer, answer
            client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            msg_id = client.new_id()
            client.send({"jsonrpc": "2.0", "id": msg_id, "method": "agentls/chat",
                         "params": {"prompt": "where is the rate limit backoff?"}})
            chat = client.wait_response(msg_id, timeout=WAIT_S)
            assert "result" in chat, chat
            search_result(server)
        finally:
            assert client.close() == 0, client.stderr.decode(errors="replace")[-2000:]
    assert_safe_and_reranked(hostile, workers)


async def test_acp_started_through_python_as_the_readme_says(
        hostile: Hostile, server: ReplayServer) -> None:
    server.load({"steps": search_calls()})
    client = RecordingClient()
    argv = [sys.executable, "-P", "-m", "agentls", "acp"]
    async with acp.spawn_agent_process(client, *argv, env=acp_env(server),
                                       cwd=str(hostile.root)) as (conn, process):
        with watch_workers(process.pid) as workers:
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                  client_capabilities=client.capabilities())
            session = await conn.new_session(cwd=str(hostile.root), mcp_servers=[])
            answer = await asyncio.wait_for(conn.prompt(
                session_id=session.session_id,
                prompt=[acp.text_block("where is the rate limit backoff?")]), WAIT_S)
            assert answer.stop_reason == "end_turn", answer
    search_result(server)
    assert_safe_and_reranked(hostile, workers)


def test_agentls_run_with_the_search_tool(hostile: Hostile, server: ReplayServer) -> None:
    server.load({"steps": search_calls()})
    done, workers = run_command([AGENTLS, "run", "-p", "where is the rate limit backoff?"],
                                hostile.root, scripted_env(server))
    assert done.returncode == 0, done.stderr
    assert "It is the backoff." in done.stdout
    search_result(server)
    assert_safe_and_reranked(hostile, workers)


TREES = {
    # aiohttp/: typedefs and a types-like module beside http.py, importing the standard ones.
    "aiohttp-like": {
        "types.py": "from types import MappingProxyType\nfrom typing import Any\n\n"
                    "EMPTY: Any = MappingProxyType({})\n",
        "http.py": "from http import HTTPStatus\n\nSERVER_SOFTWARE = 'Python/3.11'\n"
                   "RESPONSES = {s.value: s.phrase for s in HTTPStatus}\n",
        "client_reqrep.py": "def read_retry_after(headers):\n"
                            "    '''Seconds to sleep before another attempt, from a 429.'''\n"
                            "    return float(headers.get('Retry-After', '1'))\n",
        "web_response.py": "def json_response(data):\n    return {'body': data}\n",
    },
    # fastapi/: types.py and http.py (its security module's) at the top.
    "fastapi-like": {
        "types.py": "import types\nfrom enum import Enum\nfrom typing import Any, Callable, "
                    "TypeVar, Union\n\nDecoratedCallable = TypeVar('DecoratedCallable', "
                    "bound=Callable[..., Any])\nUnionType = getattr(types, 'UnionType', Union)\n"
                    "ModelNameMap = dict[Union[type, Enum], str]\n",
        "http.py": "from http import HTTPStatus\n\n\nclass HTTPBase:\n"
                   "    status = HTTPStatus.UNAUTHORIZED\n",
        "throttling.py": "def wait_for_quota(response):\n"
                         "    '''Sleep as long as the server asked after too many requests.'''\n"
                         "    return float(response.headers['retry-after'])\n",
        "routing.py": "def add_api_route(path, endpoint):\n    return (path, endpoint)\n",
    },
}


@pytest.mark.parametrize("tree", sorted(TREES))
def test_trees_with_types_and_http_on_top_rerank(tree: str, tmp_path: Path) -> None:
    for name, text in TREES[tree].items():
        (tmp_path / name).write_text(text)
    done, workers = run_command([AGENTLS, "search", QUERY, "--json"], tmp_path,
                                dict(os.environ))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["reranked_by"] == "local:all-MiniLM-L6-v2", result["warnings"]
    assert result["warnings"] == []
    assert workers and all(argv[1] == "-P" for argv, _ in workers)
