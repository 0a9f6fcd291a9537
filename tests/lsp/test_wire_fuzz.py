"""Property-based fuzzing of the real ``agentls serve`` over stdio: >= 2,000 random and
mutated JSON-RPC messages (wrong types, missing fields, huge strings, unicode, deep nesting,
bodies that are not JSON); after each one a well-formed request still answers, and every
fuzzed request with a usable id gets its own response."""

from __future__ import annotations

import copy
import json
import os
import queue
import signal
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.lsp.raw_client import RawClient
from tests.lsp.test_wire import RANGE, probe

EXAMPLES = int(os.environ.get("AGENTLS_FUZZ_EXAMPLES", "2000"))
METHODS = ["textDocument/codeAction", "codeAction/resolve", "agentls/chat", "agentls/cancel",
           "agentls/sessions", "agentls/history", "workspace/executeCommand",
           "textDocument/didOpen", "textDocument/didChange", "textDocument/didClose",
           "workspace/didChangeConfiguration", "$/cancelRequest", "textDocument/hover",
           "initialize", "initialized", "agentls/unknown"]


def templates(uri: str) -> list[dict[str, Any]]:
    return [
        {"method": "textDocument/codeAction", "params": {
            "textDocument": {"uri": uri}, "range": RANGE, "context": {"diagnostics": []}}},
        {"method": "codeAction/resolve", "params": {
            "title": "AgentLS: Explain", "kind": "quickfix", "data": {"uri": uri}}},
        {"method": "agentls/history", "params": {"sessionId": "s"}},
        {"method": "agentls/sessions", "params": {"limit": 5}},
        {"method": "agentls/cancel", "params": {"runId": "r"}},
        {"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}}},
        {"method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": RANGE, "text": "y"}]}},
        {"method": "workspace/executeCommand", "params": {
            "command": "agentls.newSession", "arguments": []}},
    ]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**63, max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12)
special = st.sampled_from([
    "x" * 1_000_000, "é☃😀\u0000\ud7ff", "\\u0000", "file:///../../etc/passwd", "",
    -1, 2**70, 1.5, True, [], {}, None])


NEST = "@@nest@@"  # replaced in the body by deep nesting (json.dumps would recurse)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if len(prefix) > 6:
        return found
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


@st.composite
def mutated(draw: st.DrawFn, uri: str) -> dict[str, Any]:
    message = copy.deepcopy(draw(st.sampled_from(templates(uri))))
    message["jsonrpc"] = "2.0"
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(paths(message)))
        if not where:
            continue
        parent = message
        for step in where[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["delete", "replace", "special", "nest"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[where[-1]]
        elif action == "replace":
            parent[where[-1]] = draw(json_values)
        elif action == "special":
            parent[where[-1]] = draw(special)
        else:
            parent[where[-1]] = NEST
    return message


@st.composite
def random_message(draw: st.DrawFn) -> Any:
    message: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "1.0", 2]))}
    if draw(st.booleans()):
        message["method"] = draw(st.sampled_from(METHODS) | st.text(max_size=20))
    if draw(st.booleans()):
        message["params"] = draw(json_values)
    if draw(st.booleans()):
        message[draw(st.text(max_size=6))] = draw(json_values)
    return draw(st.just(message) | json_values)


@st.composite
def fuzz_case(draw: st.DrawFn, uri: str) -> tuple[bytes, bool]:
    """A body to send and whether it is a request that must get its own answer."""
    kind = draw(st.sampled_from(["mutated", "random", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200)), False
    message = draw(mutated(uri)) if kind == "mutated" else draw(random_message())
    is_request = isinstance(message, dict) and draw(st.booleans())
    if is_request:
        message["id"] = "pending"  # replaced by a unique id when sent
    body = json.dumps(message, ensure_ascii=draw(st.booleans())).encode("utf-8",
                                                                        "surrogatepass")
    depth = draw(st.integers(1, 5000))
    body = body.replace(json.dumps(NEST).encode(), b"[" * depth + b"{}" + b"]" * depth)
    return body, is_request


def test_fuzzed_messages_never_stop_the_server(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    client = RawClient(tmp_path, env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                                      "OPENAI_API_KEY": "fuzz-not-a-key"})
    client.initialize()
    uri = (tmp_path / "a.py").as_uri()
    counts = {"sent": 0, "requests": 0, "probes": 0}
    pending: dict[str, bytes] = {}
    slow: list[tuple[float, bytes]] = []

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(fuzz_case(uri))
    def one(case: tuple[bytes, bool]) -> None:
        body, is_request = case
        if is_request:
            msg_id = f"fuzz-{counts['sent']}"
            body = body.replace(b'"id": "pending"', json.dumps({"id": msg_id})[1:-1].encode())
            pending[msg_id] = body[:300]
            counts["requests"] += 1
        started = time.monotonic()
        client.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        counts["sent"] += 1
        try:
            answer = probe(client)
        except queue.Empty:
            client.proc.send_signal(signal.SIGUSR1)  # the server's threads' stacks, to stderr
            time.sleep(2)
            raise AssertionError(f"no answer after message {counts['sent']} (server exit "
                                 f"code {client.proc.poll()}): {body[:300]!r}\nserver log "
                                 f"tail:\n{client.stderr[-12000:].decode(errors='replace')}"
                                 ) from None
        assert "result" in answer
        counts["probes"] += 1
        slow.append((time.monotonic() - started, body[:120]))

    try:
        one()
        unanswered = []
        for msg_id in pending:
            try:
                client.wait_response(msg_id, timeout=20)
            except Exception:
                unanswered.append(msg_id)
    finally:
        code = client.close()
    print(f"fuzz: {counts['sent']} messages sent ({counts['requests']} requests), "
          f"{counts['probes']} probes answered, {len(unanswered)} requests unanswered")
    for seconds, head in sorted(slow, reverse=True)[:5]:
        print(f"  slowest: {seconds:.2f}s {head!r}")
    assert counts["sent"] >= EXAMPLES and counts["probes"] == counts["sent"]
    assert not unanswered, [pending[i] for i in unanswered[:5]]
    assert code == 0
