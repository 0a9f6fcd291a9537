"""A planted key appears nowhere: a 401 body quoting it and a model reply echoing it (read
from a file it was shown) go through `agentls run` and `agentls serve -vv`; every output and
every file written is searched for it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.cli.headless_helpers import SECRET, agentls, call, scripted_env
from tests.lsp.raw_client import RawClient

from agentls.devtools.replay.command import ReplayServer
from agentls.policy.redaction import MARKER, StreamRedactor, add_secrets, redact

OTHER_SHAPES = ("ghp_" + "a1B2" * 9, "AKIA" + "ABCDEFGHIJKLMNOP", "Bearer tok.en-0123456789ab")


def _script() -> dict[str, Any]:
    echo = f"The file says {SECRET} and {' '.join(OTHER_SHAPES)}."
    return {"steps": [
        {"match": {"user": "fail"}, "times": "*", "error": {"status": 401, "body": {"error": {
            "message": f"Incorrect API key provided: {SECRET}.", "code": "invalid_api_key"}}}},
        {"match": {"tool_results": False}, "times": "*", "reply": {"tool_calls": [
            call("read_file", "c1", path="notes.txt")]}},
        {"match": {"tool": "read_file"}, "times": "*", "reply": {"text": echo, "chunk_size": 5}},
    ]}


def _files_holding(root: Path, needle: bytes, skip: Path) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and path != skip and needle in path.read_bytes():
            found.append(path)
    return found


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text(f"key = {SECRET}\n{chr(10).join(OTHER_SHAPES)}\n")
    return root


def _assert_nowhere(texts: dict[str, str], roots: list[Path], planted: Path) -> None:
    for name, text in texts.items():
        for secret in (SECRET, *OTHER_SHAPES):
            assert secret not in text, f"{secret!r} in {name}"
    for root in roots:
        for secret in (SECRET, *OTHER_SHAPES):
            assert _files_holding(root, secret.encode(), planted) == [], secret


def test_the_key_reaches_no_cli_output_and_no_file(server: ReplayServer, tmp_path: Path) -> None:
    server.load(_script())
    root = _project(tmp_path)
    # Agent runs are answered from the cache (and write it) only with cache.agent_runs.
    env = {**scripted_env(server), "AGENTLS_CACHE__ENABLED": "true",
           "AGENTLS_CACHE__AGENT_RUNS": "true"}
    echoed = agentls("run", "--artifacts", "-v", "show me notes.txt", env=env, cwd=root)
    as_json = agentls("run", "--json", "--no-cache", "show me notes.txt", env=env, cwd=root)
    refused = agentls("run", "please fail", env=env, cwd=root)
    assert echoed.returncode == 0, echoed.stderr
    assert MARKER in echoed.stdout and "The file says" in echoed.stdout
    assert MARKER in json.loads(as_json.stdout)["text"]
    assert refused.returncode != 0 and "Incorrect API key provided" in refused.stderr
    cache = Path(os.environ["XDG_CACHE_HOME"])
    assert (root / ".agentls" / "state.db").exists() and any((root / ".agentls").glob("runs/*"))
    assert any(p.is_file() for p in cache.rglob("*")), "the response cache was written"
    _assert_nowhere({"stdout": echoed.stdout + as_json.stdout + refused.stdout,
                     "stderr": echoed.stderr + as_json.stderr + refused.stderr},
                    [root, cache], root / "notes.txt")


def test_the_key_reaches_no_lsp_message_and_no_log(server: ReplayServer, tmp_path: Path) -> None:
    server.load(_script())
    root = _project(tmp_path)
    log = tmp_path / "serve.log"
    # Agent runs are answered from the cache (and write it) only with cache.agent_runs.
    env = {**scripted_env(server), "AGENTLS_CACHE__ENABLED": "true",
           "AGENTLS_CACHE__AGENT_RUNS": "true"}
    client = RawClient(root, env, args=("-vv", "--log-file", str(log)))
    try:
        client.request("initialize", {"processId": None, "rootUri": root.as_uri(),
                                      "capabilities": {"window": {"workDoneProgress": True}}})
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        answered = client.request("agentls/chat", {"prompt": "show me notes.txt",
                                                   "workDoneToken": "t1"})
        failed = client.request("agentls/chat", {"prompt": "please fail",
                                                 "workDoneToken": "t2"})
    finally:
        client.close()
    assert MARKER in answered["result"]["text"]
    assert "Incorrect API key provided" in json.dumps(failed)
    kinds = {m["method"] for m in client.notifications}
    assert {"agentls/chatEvent", "$/progress"} <= kinds
    wire = json.dumps([answered, failed, *client.notifications])
    _assert_nowhere({"LSP messages": wire, "stderr": client.stderr.decode(),
                     "-vv log": log.read_text()},
                    [root, Path(os.environ["XDG_CACHE_HOME"])], root / "notes.txt")
    assert "Sending data" in log.read_text()  # -vv logged every message, redacted


def test_a_key_split_across_stream_pieces_is_still_redacted() -> None:
    add_secrets(["split-key-0123456789"])
    redactor = StreamRedactor()
    pieces = ["abc split-k", "ey-0123", "456789 and sk-", "proj-ABCDEFGHIJ", "KLMNOPQR done"]
    out = "".join(redactor.feed(p) for p in pieces) + redactor.flush()
    assert out == f"abc {MARKER} and {MARKER} done"
    assert redact("Authorization: Bearer abcdefghijklmnop") == f"Authorization: Bearer {MARKER}"
