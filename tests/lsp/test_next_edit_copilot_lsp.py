"""A byte-level client sending what copilot-lsp (copilotlsp-nvim/copilot-lsp, lua/copilot-lsp/
nes) sends to its server, with AgentLS as that server: ``textDocument/didFocus`` on entering a
buffer, ``textDocument/copilotInlineEdit`` with ``make_position_params`` plus the buffer's
version, ``textDocument/didShowInlineEdit`` with ``{item: {command: edits[1].command}}``, and
(as the Copilot language server's README asks of clients) the edit's command through
``workspace/executeCommand`` after the edit is applied. The model is the scripted server."""

from __future__ import annotations

from pathlib import Path

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import options_for
from tests.lsp.raw_client import RawClient
from tests.lsp.test_next_edit import SOURCE


def test_copilot_lsp_messages(project: Path, model: ReplayServer) -> None:
    model.load({"steps": [{"times": "*", "reply": {"rewrite": [["count", "total"]]}}]})
    options = options_for(model)
    options["next_edit"] = {"model": "scripted-model", "format": "zeta", "debounce_ms": 0}
    client = RawClient(project)
    try:
        answer = client.request("initialize", {
            "processId": None, "rootUri": project.as_uri(), "initializationOptions": options,
            "capabilities": {"general": {"positionEncodings": ["utf-16"]}}})
        assert answer["result"]["capabilities"]["positionEncoding"] == "utf-16"
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        uri = (project / "src" / "scale.py").as_uri()
        client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri, "languageId": "python", "version": 0,
                             "text": SOURCE}}})
        client.send({"jsonrpc": "2.0", "method": "textDocument/didFocus",
                     "params": {"textDocument": {"uri": uri}}})
        client.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 1},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 18},
                                          "end": {"line": 0, "character": 23}},
                                "text": "total"}]}})
        reply = client.request("textDocument/copilotInlineEdit", {
            "textDocument": {"uri": uri, "version": 1},
            "position": {"line": 0, "character": 23}})
        assert "error" not in reply, reply
        (edit,) = reply["result"]["edits"]
        assert edit == {
            "text": "total", "textDocument": {"uri": uri, "version": 1},
            "range": {"start": {"line": 3, "character": 27}, "end": {"line": 3, "character": 32}},
            "command": {"title": "Accept next edit", "command": "agentls.nextEdit.accept",
                        "arguments": [edit["command"]["arguments"][0]]}}
        client.send({"jsonrpc": "2.0", "method": "textDocument/didShowInlineEdit",
                     "params": {"item": {"command": edit["command"]}}})
        # copilot-lsp applies it with vim.lsp.util.apply_text_edits: a didChange follows
        client.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": edit["range"], "text": edit["text"]}]}})
        done = client.request("workspace/executeCommand", {
            "command": edit["command"]["command"], "arguments": edit["command"]["arguments"]})
        assert done.get("error") is None, done
        reply = client.request("textDocument/copilotInlineEdit", {
            "textDocument": {"uri": uri, "version": 2},
            "position": {"line": 3, "character": 32}})
        (second,) = reply["result"]["edits"]
        assert second["range"]["start"] == {"line": 4, "character": 16}
        assert second["textDocument"]["version"] == 2
    finally:
        assert client.close() == 0
    log = client.stderr.decode()
    assert "unknown method" not in log.lower() and "Traceback" not in log, log
