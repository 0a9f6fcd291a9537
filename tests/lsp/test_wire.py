"""Bad input on the real stdio wire: every request is answered, bad framing resynchronises,
bad notifications are never answered, an older didChange is dropped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.raw_client import RawClient

RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[RawClient]:
    (tmp_path / "a.py").write_text("x = 1\n")
    raw = RawClient(tmp_path)
    assert "result" in raw.initialize()
    yield raw
    raw.close()


def probe(client: RawClient) -> dict[str, Any]:
    """A well-formed request the server must still answer."""
    return client.request("textDocument/codeAction", {
        "textDocument": {"uri": (client.root / "a.py").as_uri()}, "range": RANGE,
        "context": {"diagnostics": []}})


def error_of(client: RawClient, message: dict[str, Any]) -> dict[str, Any]:
    client.send(message)
    answer = client.wait_response(message["id"])
    assert "error" in answer, answer
    return dict(answer["error"])


@pytest.mark.parametrize(("method", "params", "field"), [
    ("textDocument/codeAction", {"range": RANGE, "context": {"diagnostics": []}},
     "textDocument"),
    ("textDocument/codeAction", {"textDocument": {"uri": "file:///a"},
                                 "range": {**RANGE, "start": {"line": "top", "character": 0}},
                                 "context": {"diagnostics": []}}, "line"),
    ("textDocument/codeAction", {"textDocument": {"uri": "file:///a"}, "range": "all",
                                 "context": {"diagnostics": []}}, "range"),
    ("textDocument/codeAction", None, "params"),
    ("codeAction/resolve", {"kind": "quickfix"}, "title"),
    ("codeAction/resolve", [1, 2], "params"),
    ("agentls/chat", {"prompt": 5}, "prompt"),
    ("agentls/chat", {}, "prompt"),
    ("agentls/chat", {"prompt": "hi", "context": "nope"}, "context"),
])
def test_malformed_params_get_32602_naming_the_field(client: RawClient, method: str,
                                                    params: Any, field: str) -> None:
    error = error_of(client, {"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    assert error["code"] == -32602
    assert field in error["message"]
    assert "result" in probe(client)


def test_unknown_method_is_32601(client: RawClient) -> None:
    error = error_of(client, {"jsonrpc": "2.0", "id": "u", "method": "agentls/nope"})
    assert error["code"] == -32601


@pytest.mark.parametrize("body", [b"{not json", b"\xff\xfe", b""])
def test_body_that_is_not_json_is_32700(client: RawClient, body: bytes) -> None:
    client.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    answer = client.wait_response(None)
    assert answer["error"]["code"] == -32700 and answer["id"] is None
    assert "result" in probe(client)


@pytest.mark.parametrize("message", [
    [1, 2], 5, "text", {"jsonrpc": "2.0", "id": 3}, {"jsonrpc": "1.0", "id": 3, "method": "x"},
    {"jsonrpc": "2.0", "id": {"a": 1}, "method": "shutdown"},
    {"jsonrpc": "2.0", "id": 3, "method": 42},
    {"jsonrpc": "2.0", "id": 3, "method": "agentls/chat", "params": "prompt"},
])
def test_non_request_object_is_32600(client: RawClient, message: Any) -> None:
    client.send(message)
    msg_id = message.get("id") if isinstance(message, dict) else None
    msg_id = msg_id if isinstance(msg_id, int | str) else None
    assert client.wait_response(msg_id)["error"]["code"] == -32600
    assert "result" in probe(client)


def test_bad_notifications_are_never_answered(client: RawClient) -> None:
    for message in [
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": 1}},
        {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": [1]},
        {"jsonrpc": "2.0", "method": "agentls/unknown", "params": {}},
        {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {}},
        {"jsonrpc": "2.0", "method": 5},
    ]:
        client.send(message)
    answer = probe(client)
    assert "result" in answer
    assert client.messages.empty() and not client.responses  # only the probe was answered


def test_content_length_too_short_resynchronises(client: RawClient) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 50, "method": "agentls/nope"}).encode()
    client.write(b"Content-Length: %d\r\n\r\n" % (len(body) - 10) + body)
    assert client.wait_response(None)["error"]["code"] == -32700
    assert "result" in probe(client)


def test_content_length_too_long_resynchronises(client: RawClient) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 51, "method": "agentls/nope"}).encode()
    client.write(b"Content-Length: %d\r\n\r\n" % (len(body) + 40) + body)
    assert client.wait_response(51)["error"]["code"] == -32601  # idle: body ends at the JSON
    client.write(b"Content-Length: %d\r\n\r\n" % (len(body) + 300) + body)
    assert "result" in probe(client)  # the next header arrives inside the declared length
    assert client.wait_response(51, timeout=5)["error"]["code"] == -32601


@pytest.mark.parametrize("extra", [1, 5, 13, 19])
def test_content_length_too_long_by_less_than_a_header_resynchronises(
        client: RawClient, extra: int) -> None:
    # The declared length ends inside the next header: that header must not be swallowed.
    first = json.dumps({"jsonrpc": "2.0", "id": 61, "method": "agentls/nope"}).encode()
    second = json.dumps({"jsonrpc": "2.0", "id": 62, "method": "agentls/nope"}).encode()
    client.write(b"Content-Length: %d\r\n\r\n" % (len(first) + extra) + first
                 + b"Content-Length: %d\r\n\r\n" % len(second) + second)
    assert client.wait_response(61, timeout=5)["error"]["code"] == -32601
    assert client.wait_response(62, timeout=5)["error"]["code"] == -32601
    assert "result" in probe(client)


@pytest.mark.parametrize("extra", [3, 40])
def test_unreadable_body_with_a_long_content_length_is_32700_with_id_null(
        client: RawClient, extra: int) -> None:
    broken = b'{"jsonrpc": "2.0", "id": 63, "method": "agentls/nope", "par'
    second = json.dumps({"jsonrpc": "2.0", "id": 64, "method": "agentls/nope"}).encode()
    client.write(b"Content-Length: %d\r\n\r\n" % (len(broken) + extra) + broken
                 + b"Content-Length: %d\r\n\r\n" % len(second) + second)
    answer = client.wait_response(None, timeout=5)
    assert answer["error"]["code"] == -32700
    assert "id" in answer and answer["id"] is None  # JSON-RPC: a parse error has id null
    assert client.wait_response(64, timeout=5)["error"]["code"] == -32601


def test_an_unreadable_body_waiting_for_bytes_that_never_come_does_not_swallow_the_next(
        client: RawClient) -> None:
    broken = b'{"jsonrpc": "2.0", "id": 65, "method": "agentls/nope", "par'
    second = json.dumps({"jsonrpc": "2.0", "id": 66, "method": "agentls/nope"}).encode()
    # The declared length runs far past the next message, which comes whole after it.
    client.write(b"Content-Length: %d\r\n\r\n" % (len(broken) + 5_000) + broken
                 + b"Content-Length: %d\r\n\r\n" % len(second) + second)
    answer = client.wait_response(None, timeout=10)
    assert answer["error"]["code"] == -32700 and answer["id"] is None
    assert client.wait_response(66, timeout=10)["error"]["code"] == -32601
    assert "result" in probe(client)


def test_garbage_between_messages_is_skipped(client: RawClient) -> None:
    client.write(b"hello there\r\nX-Junk\r\n\r\n")
    client.write(b"Content-Length: 99999999999999\r\n\r\n")
    assert "result" in probe(client)


def test_older_did_change_is_ignored(client: RawClient) -> None:
    uri = (client.root / "a.py").as_uri()
    client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": uri, "languageId": "python", "version": 5, "text": "x = 1\n"}}})

    def change(version: int, text: str) -> None:
        client.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": text}]}})

    change(7, "newer = 7\n")
    change(6, "older = 6\n")
    probe(client)
    client.close()
    log = client.stderr.decode()
    assert "ignored didChange" in log and "version 6 is older than version 7" in log


def test_exit_without_shutdown_exits_1(tmp_path: Path) -> None:
    raw = RawClient(tmp_path)
    raw.initialize()
    raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert raw.proc.wait(timeout=30) == 1


def test_too_deep_request_is_answered_with_its_id(client: RawClient) -> None:
    body = b'{"jsonrpc": "2.0", "id": "deep", "method": "agentls/chat", "params": ' + (
        b"[" * 5000 + b"]" * 5000 + b"}")
    client.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert client.wait_response("deep")["error"]["code"] == -32600
    assert "result" in probe(client)


def test_notification_sent_as_a_request_is_answered(client: RawClient) -> None:
    uri = (client.root / "a.py").as_uri()
    error = error_of(client, {"jsonrpc": "2.0", "id": "n", "method": "textDocument/didChange",
                              "params": {"textDocument": {"uri": uri, "version": 2},
                                         "contentChanges": [{"text": ""}]}})
    assert error["code"] == -32600 and "notification" in error["message"]


def test_an_answer_that_does_not_fit_its_request_fails_the_request_not_the_server(
        tmp_path: Path) -> None:
    """This client answers workspace/configuration with null (an array is due): the settings
    fall back to initializationOptions with a log line, and the requests that wait for
    them are answered (they used to wait forever)."""
    raw = RawClient(tmp_path)  # answers every server request with null
    raw.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(),
                               "capabilities": {"workspace": {"configuration": True}}})
    raw.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    answer = raw.request("agentls/sessions", {"limit": 5})
    assert answer["result"]["sessions"] == []
    assert raw.close() == 0
    log = raw.stderr.decode()
    assert "a response from the client does not fit its request" in log
    assert "workspace/configuration failed" in log and "using initializationOptions" in log


def test_a_server_stopped_right_after_it_started_exits_cleanly(tmp_path: Path) -> None:
    """shutdown and exit while the start-up work still runs (the engine importing, the TLS
    context being built): the process ends with 0. The TLS thread was a daemon, and a server
    ending while it was inside OpenSSL died with SIGSEGV (about 2 exits in 10 like these)."""
    for round_ in range(6):
        root = tmp_path / f"ws{round_}"
        root.mkdir()
        raw = RawClient(root)
        raw.initialize()
        assert "result" in raw.request("agentls/sessions", {"limit": 5})
        assert raw.close() == 0, raw.stderr.decode()[-2000:]
