"""A byte-level LSP client for the real ``agentls serve``: it writes any bytes (bad framing,
bodies that are not JSON) and collects every frame the server sends back."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

WAIT_S = 30.0


class RawClient:
    def __init__(self, root: Path, env: dict[str, str] | None = None,
                 args: tuple[str, ...] = (), command: list[str] | None = None) -> None:
        self.proc = subprocess.Popen(
            (command or [sys.executable, "-P", "-m", "agentls", "serve"]) + list(args), cwd=root,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})})
        self.root = root
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self.responses: dict[Any, dict[str, Any]] = {}  # answers that came while waiting
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._stderr = bytearray()  # drained as it comes: a full pipe would block the server
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()

    @property
    def stderr(self) -> bytes:
        return bytes(self._stderr)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr += line

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if not line.strip():
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None
            self.messages.put(json.loads(stream.read(length)))

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        body = json.dumps(message).encode()
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def new_id(self) -> int:
        self._next_id += 1
        return 10_000_000 + self._next_id

    def wait_response(self, msg_id: Any, timeout: float = WAIT_S) -> dict[str, Any]:
        """The response to ``msg_id``; notifications and other responses are kept aside."""
        if msg_id in self.responses:
            return self.responses.pop(msg_id)
        while True:
            message = self.messages.get(timeout=timeout)
            if "method" in message and "id" in message:  # a server → client request
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "method" in message:
                self.notifications.append(message)
            elif message.get("id") == msg_id:
                return message
            else:
                self.responses[message.get("id")] = message

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        msg_id = self.new_id()
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return self.wait_response(msg_id)

    def initialize(self) -> dict[str, Any]:
        answer = self.request("initialize", {
            "processId": None, "rootUri": self.root.as_uri(), "capabilities": {}})
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return answer

    def close(self) -> int:
        try:
            self.request("shutdown")
            self.send({"jsonrpc": "2.0", "method": "exit"})
        except (OSError, queue.Empty):
            pass
        try:
            self.proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._drain.join(timeout=WAIT_S)
        return self.proc.returncode
