"""A misbehaving language server for the bad-input tests (test fixture, not product code).

argv[1] says how it misbehaves: ok (answers initialize, publishes one diagnostic per opened
document), exit (exits at once with an error on stderr), silent (never answers initialize),
flood (20,000 window/logMessage before answering), garbage (answers initialize with
malformed JSON), network (tries to connect out, reports what happened as a diagnostic),
needs-setting (asks workspace/configuration for its setting, prints an error and exits when
it is missing), hang-requests (answers initialize, never any request after).
"""

from __future__ import annotations

import json
import socket
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
out = sys.stdout.buffer
inp = sys.stdin.buffer


def send(message: dict[str, object]) -> None:
    body = json.dumps(message).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()


def read() -> dict[str, object] | None:
    length = 0
    while True:
        line = inp.readline()
        if not line:
            return None
        if line.startswith(b"Content-Length:"):
            length = int(line.split(b":")[1])
        elif line in (b"\r\n", b"\n"):
            break
    return json.loads(inp.read(length))


CAPS = {"capabilities": {"textDocumentSync": 1, "definitionProvider": True}}


def network_note() -> str:
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=2).close()
        return "network reached"
    except OSError as exc:
        return f"no network: {exc}"


def main() -> None:
    if MODE == "exit":
        print("fatal: cannot find the project's compiler", file=sys.stderr, flush=True)
        sys.exit(3)
    note = network_note() if MODE == "network" else ""
    if MODE == "child":  # a child that keeps the pipes open, as node under a wrapper does
        import subprocess

        child = subprocess.Popen(["sleep", "300"])
        note = f"child {child.pid}"
    pending: list[dict[str, object]] = []
    while True:
        message = pending.pop(0) if pending else read()
        if message is None:
            return
        method = message.get("method")
        if method == "initialize":
            if MODE == "silent":
                continue
            if MODE == "flood":
                for n in range(20_000):
                    send({"jsonrpc": "2.0", "method": "window/logMessage",
                          "params": {"type": 3, "message": f"indexing {n}"}})
            if MODE == "garbage":
                body = b'{"jsonrpc": "2.0", "id": 0, "result": {oops'
                out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                out.flush()
                continue
            send({"jsonrpc": "2.0", "id": message["id"], "result": CAPS})
        elif method == "initialized" and MODE == "needs-setting":
            send({"jsonrpc": "2.0", "id": 99, "method": "workspace/configuration",
                  "params": {"items": [{"section": "fake.compilerPath"}]}})
            answer = read()
            while answer is not None and answer.get("id") != 99:
                pending.append(answer)  # didOpen came first: handled after the answer
                answer = read()
            value = (answer or {}).get("result", [None])
            if not isinstance(value, list) or value[0] is None:
                print("error: fake.compilerPath is not set; set it to your compiler",
                      file=sys.stderr, flush=True)
                sys.exit(2)
        elif method == "textDocument/didOpen" or method == "textDocument/didChange":
            params = message["params"]
            assert isinstance(params, dict)
            document = params["textDocument"]
            text = document.get("text") or params["contentChanges"][-1]["text"]
            words = "bad" in text
            diagnostics = [{"range": {"start": {"line": 0, "character": 0},
                                      "end": {"line": 0, "character": 3}},
                            "severity": 1, "message": note or "bad word", "source": "fake"}
                           ] if words or note else []
            send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                  "params": {"uri": document["uri"], "version": document["version"],
                             "diagnostics": diagnostics}})
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "exit":
            return
        elif "id" in message and MODE != "hang-requests":
            send({"jsonrpc": "2.0", "id": message["id"], "result": None})


main()
