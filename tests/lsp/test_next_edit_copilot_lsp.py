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

# A line where UTF-8 and UTF-16 positions differ before the edit ('é' is 2 bytes, 1 unit).
TEXT = SOURCE.replace("out.append(value * count)", "out.append(é_value * count)").replace(
    "for value in values", "for é_value in values")
AT = TEXT.splitlines()[3].index("count")  # in UTF-16 units (no character past the BMP)
assert len(TEXT.splitlines()[3][:AT].encode()) == AT + 1  # in UTF-8 it would be one more


def test_copilot_lsp_messages(project: Path, model: ReplayServer) -> None:
    model.load({"steps": [{"times": "*", "reply": {"rewrite": [["count", "total"]]}}]})
    options = options_for(model)
    options["next_edit"] = {"model": "scripted-model", "format": "zeta", "debounce_ms": 0}
    # copilot-lsp's lsp/copilot_ls.lua: init_options editorInfo and editorPluginInfo (our
    # settings beside them), and Neovim's own position encodings, UTF-8 first
    options["editorInfo"] = {"name": "neovim", "version": "0.11.4"}
    options["editorPluginInfo"] = {"name": "Github Copilot LSP for Neovim", "version": "0.0.1"}
    client = RawClient(project)
    try:
        answer = client.request("initialize", {
            "processId": None, "rootUri": project.as_uri(), "initializationOptions": options,
            "capabilities": {"general": {"positionEncodings": ["utf-8", "utf-16", "utf-32"]}}})
        negotiated = answer["result"]["capabilities"].get("positionEncoding", "utf-16")
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        uri = (project / "src" / "scale.py").as_uri()
        client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri, "languageId": "python", "version": 0,
                             "text": TEXT}}})
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
        # copilot-lsp makes and applies these positions in UTF-16 (make_position_params(0,
        # "utf-16"), apply_text_edits(..., "utf-16")): so are they, whatever was negotiated
        assert edit == {
            "text": "total", "textDocument": {"uri": uri, "version": 1},
            "range": {"start": {"line": 3, "character": AT},
                      "end": {"line": 3, "character": AT + 5}},
            "command": {"title": "Accept next edit", "command": "agentls.nextEdit.accept",
                        "arguments": [edit["command"]["arguments"][0]]}}
        client.send({"jsonrpc": "2.0", "method": "textDocument/didShowInlineEdit",
                     "params": {"item": {"command": edit["command"]}}})
        # copilot-lsp applies it with vim.lsp.util.apply_text_edits(..., "utf-16"); Neovim
        # then sends the buffer's change in the negotiated encoding (UTF-8 here)
        client.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 3, "character": AT + 1},
                                          "end": {"line": 3, "character": AT + 6}},
                                "text": edit["text"]}]}})
        done = client.request("workspace/executeCommand", {
            "command": edit["command"]["command"], "arguments": edit["command"]["arguments"]})
        assert done.get("error") is None, done
        reply = client.request("textDocument/copilotInlineEdit", {
            "textDocument": {"uri": uri, "version": 2},
            "position": {"line": 3, "character": 32}})
        (second,) = reply["result"]["edits"]
        assert second["range"]["start"] == {"line": 4, "character": 16}
        assert negotiated == "utf-8"  # so the lines with 'é' above were counted in UTF-16
        assert second["textDocument"]["version"] == 2
        # from the same rewrite: the document holds exactly the accepted edit
        assert len([r for r in model.requests if r.path == "/v1/completions"]) == 1
    finally:
        assert client.close() == 0
    log = client.stderr.decode()
    assert "unknown method" not in log.lower() and "Traceback" not in log, log
