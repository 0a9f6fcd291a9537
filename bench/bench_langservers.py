"""The project's language servers as the agent's eyes (issue 39): what AgentLS adds.

The server is basedpyright from PyPI (a dev dependency), as detected beside AgentLS.

- Warm diagnostics of one changed file: the ``diagnostics`` question through AgentLS's pool
  (the pending text read through the workspace, ``didChange`` to the sandboxed server, the
  pulled report, positions and the line's text, new-since-the-turn marks against the cached
  baseline) against the same server started directly (no sandbox) and asked directly over
  stdio by pygls's own client (``didChange`` + ``textDocument/diagnostic``): the floor.
  Each round changes the file's text on both sides, interleaved, in one run.
  Goal: ratio <= 1.2 (medians).
- Cold start: from nothing to the first diagnostics of the file, through AgentLS (the
  sandbox, initialize, the analysis, and the baseline's analysis of the file as it was)
  beside the bare server's own (spawn, initialize, didOpen, the first report). Reported.
- Memory: resident memory of each server after the warm rounds (AgentLS's: bwrap and
  everything in its sandbox; the bare one: the server and its children). Reported.
- The same cold start and memory for typescript-language-server when `make langservers`
  installed it.

Run alone: ``.venv/bin/python -m bench.run bench.bench_langservers``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from agentls.langservers.known import Basedpyright
from agentls.langservers.running_server import CLIENT_CAPABILITIES, memory_kb
from agentls.langservers.servers import LangServers
from agentls.sandbox.bwrap import probe
from agentls.settings.models import LangServerConfig, LspConfig
from agentls.settings.sandbox import SandboxSettings
from agentls.workspace.fence import Workspace
from bench.harness import Figure, median_ms

ROUNDS = 15
WARM_GOAL = 1.2
NODE_SERVERS = Path(__file__).resolve().parents[1] / "tests" / "langservers" / "node"

LIB = "".join(f"def helper_{i}(value: int) -> int:\n    return value + {i}\n\n\n"
              for i in range(150))
APP = "from lib import helper_1, helper_2\n\n" + "".join(
    f"def use_{i}(x: int) -> int:\n    return helper_1(x) + helper_2(x) + {i}\n\n\n"
    for i in range(150))


def _variant(n: int) -> str:
    """The app as the agent changed it, a little differently each round (one new error)."""
    return APP + f"wrong_{n}: str = helper_1({n})\n"


def _command(name: str) -> str | None:
    return shutil.which(name, path=os.pathsep.join([str(Path(sys.executable).parent),
                                                    os.environ.get("PATH", "")]))


def _project(folder: Path) -> Path:
    root = folder / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
    (root / "lib.py").write_text(LIB)
    (root / "app.py").write_text(APP)
    return root


class _Bare:
    """The server asked directly over stdio by pygls's client: the floor."""

    def __init__(self) -> None:
        self.client = LanguageClient("bench", "1")
        self.version = 1
        self.client.feature(lsp.WORKSPACE_CONFIGURATION)(lambda params: [
            _section(i.section) for i in params.items])
        for method in (lsp.CLIENT_REGISTER_CAPABILITY, lsp.WINDOW_WORK_DONE_PROGRESS_CREATE,
                       lsp.WORKSPACE_DIAGNOSTIC_REFRESH, lsp.CLIENT_UNREGISTER_CAPABILITY):
            self.client.feature(method)(lambda params: None)
        for method in (lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, lsp.WINDOW_LOG_MESSAGE,
                       lsp.PROGRESS, lsp.TELEMETRY_EVENT):
            self.client.feature(method)(lambda params: None)

    async def start(self, argv: list[str], root: Path, app: Path) -> None:
        # Its own process group: basedpyright-langserver is a Python wrapper around node.
        await self.client.start_io(argv[0], *argv[1:], cwd=str(root), start_new_session=True)
        assert self.client._server is not None and self.client._server.stderr is not None
        self._stderr = asyncio.create_task(_drain(self.client._server.stderr))
        await self.client.initialize_async(lsp.InitializeParams(
            process_id=os.getpid(), root_uri=root.as_uri(), capabilities=CLIENT_CAPABILITIES,
            workspace_folders=[lsp.WorkspaceFolder(uri=root.as_uri(), name=root.name)]))
        self.client.initialized(lsp.InitializedParams())
        self.client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams(settings=dict(Basedpyright.settings)))
        self.uri = app.as_uri()
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=self.uri, language_id="python", version=1,
                                               text=_variant(0))))

    async def diagnostics(self, text: str | None = None) -> int:
        if text is not None:
            self.version += 1
            self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(version=self.version,
                                                                  uri=self.uri),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))
        report = await self.client.text_document_diagnostic_async(
            lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=self.uri)))
        return len(getattr(report, "items", []))

    @property
    def pid(self) -> int | None:
        return self.client._server.pid if self.client._server is not None else None

    async def stop(self) -> None:
        process = self.client._server
        self.client._stop_event.set()
        if process is not None and process.returncode is None:
            os.killpg(process.pid, signal.SIGKILL)
            await asyncio.wait_for(process.wait(), 10)
        for task in [*self.client._async_tasks, getattr(self, "_stderr", None)]:
            if task is not None:
                task.cancel()


async def _drain(stream: asyncio.StreamReader) -> None:
    """A pipe nobody reads fills up and stops the server: read what it prints."""
    while await stream.read(65536):
        pass


def _section(section: str | None) -> Any:
    """The same answer AgentLS's client gives (its settings, by dotted section)."""
    node: Any = Basedpyright.settings
    for part in (section or "").split(".") if section else ():
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _pool(name: str, command: str, sandbox: str = "auto") -> LangServers:
    config = LspConfig(detect=False, servers={name: LangServerConfig(
        command=command, timeout_s=120, startup_timeout_s=120)})
    return LangServers(config, SandboxSettings(mode=sandbox), secret_env="OPENAI_API_KEY")


async def _python(command: str) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="agentls-bench-ls-") as tmp:
        root = _project(Path(tmp))
        ws = Workspace([root])
        app = ws.resolve("app.py")
        ws.stage_write(app, _variant(0))
        pool = _pool("basedpyright", command)
        bare = _Bare()
        try:
            started = time.perf_counter()
            first = await pool.diagnostics(ws, [app.abs])
            ours_cold = time.perf_counter() - started
            assert not first.failures, first.failures
            started = time.perf_counter()
            await bare.start([command, *Basedpyright.args], root, app.abs)
            await bare.diagnostics()
            bare_cold = time.perf_counter() - started
            ours: list[float] = []
            floor: list[float] = []
            for n in range(1, ROUNDS + 1):
                text = _variant(n)
                ws.stage_write(app, text)
                started = time.perf_counter()
                answer = await pool.diagnostics(ws, [app.abs])
                ours.append(time.perf_counter() - started)
                started = time.perf_counter()
                await bare.diagnostics(text)
                floor.append(time.perf_counter() - started)
                assert any(p.new for p in answer.files[0].problems)
            [server] = pool.servers()
            ours_kb, bare_kb = memory_kb(server.pid), memory_kb(bare.pid)
        finally:
            await pool.aclose()
            await bare.stop()
    warm, base = median_ms(ours), median_ms(floor)
    figures = [
        Figure("langservers: warm diagnostics of one changed file (basedpyright)", warm, "ms",
               base, f"ratio <= {WARM_GOAL}", warm <= WARM_GOAL * base),
        Figure("langservers: cold start to first diagnostics (basedpyright, sandboxed, "
               "with the baseline)", ours_cold * 1000, "ms", bare_cold * 1000),
    ]
    if ours_kb is not None:
        figures.append(Figure("langservers: memory of the sandboxed basedpyright", ours_kb / 1024,
                              "MiB", None if bare_kb is None else bare_kb / 1024))
    print(f"bench_langservers: warm ours {statistics.median(ours) * 1000:.1f} ms, floor "
          f"{statistics.median(floor) * 1000:.1f} ms", file=sys.stderr)
    return figures


async def _typescript(command: str) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="agentls-bench-ts-") as tmp:
        root = Path(tmp) / "web"
        root.mkdir()
        (root / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}}\n')
        (root / "app.ts").write_text("export const n: number = 1;\n")
        ws = Workspace([root])
        app = ws.resolve("app.ts")
        ws.stage_write(app, "export const n: number = 'one';\n")
        pool = _pool("typescript", command)
        try:
            started = time.perf_counter()
            answer = await pool.diagnostics(ws, [app.abs])
            cold = time.perf_counter() - started
            [server] = pool.servers()
            kb = memory_kb(server.pid)
            assert not answer.failures, answer.failures
            server_own = server.cold_start_s
        finally:
            await pool.aclose()
    figures = [Figure("langservers: cold start to first diagnostics (typescript, sandboxed, "
                      "with the baseline)", cold * 1000, "ms",
                      None if server_own is None else server_own * 1000)]
    if kb is not None:
        figures.append(Figure("langservers: memory of the sandboxed typescript-language-server",
                              kb / 1024, "MiB"))
    return figures


async def _all() -> list[Figure]:
    figures: list[Figure] = []
    command = _command("basedpyright-langserver")
    if command is None:
        print("bench_langservers: basedpyright is not installed (dev extra)", file=sys.stderr)
    else:
        figures += await _python(command)
    typescript = NODE_SERVERS / "node_modules" / ".bin" / "typescript-language-server"
    if typescript.exists():
        figures += await _typescript(str(typescript))
    return figures


def run() -> list[Figure]:
    status = probe()
    if not status.available:
        print(f"bench_langservers: skipped, {status.describe()}", file=sys.stderr)
        return []
    return asyncio.run(asyncio.wait_for(_all(), 900))


def main() -> None:  # `python -m bench.bench_langservers`: print the figures
    for figure in run():
        print(figure.to_json())


if __name__ == "__main__":
    main()
