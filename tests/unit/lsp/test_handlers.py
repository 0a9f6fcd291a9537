"""lsp/services/handlers.py: one mapping from the project's errors to JSON-RPC errors, and a method
registered with its command form once."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from agentls.lsp.server import create_server
from agentls.lsp.services import protocol
from agentls.lsp.services.handlers import answers_errors
from agentls.lsp.services.protocol import INVALID_PARAMS, REQUEST_FAILED, ParamsError
from agentls.lsp.services.turn import TurnRefused

LSP = Path(__file__).resolve().parents[3] / "server" / "agentls" / "lsp"


async def test_project_errors_become_json_rpc_errors() -> None:
    @answers_errors
    async def bad_params(ls: Any, params: Any) -> None:
        raise ParamsError("sessionId must be a string")

    @answers_errors
    async def refused(ls: Any, params: Any) -> None:
        raise TurnRefused("busy", data={"retryAfter": 3})

    @answers_errors
    async def unknown_session(ls: Any, params: Any) -> None:
        raise TurnRefused("no session s1", code=INVALID_PARAMS)

    with pytest.raises(JsonRpcInvalidParams, match="sessionId must be a string"):
        await bad_params(None, {})
    with pytest.raises(JsonRpcException) as caught:
        await refused(None, {})
    assert (caught.value.code, caught.value.message, caught.value.data) == (
        REQUEST_FAILED, "busy", {"retryAfter": 3})
    with pytest.raises(JsonRpcException) as caught:
        await unknown_session(None, {})
    assert caught.value.code == INVALID_PARAMS


async def test_a_bug_is_logged_and_still_raised(caplog: pytest.LogCaptureFixture) -> None:
    @answers_errors
    async def broken(ls: Any, params: Any) -> None:
        raise KeyError("oops")

    with pytest.raises(KeyError):
        await broken(None, {})
    assert "broken failed" in caplog.text


def test_methods_and_their_commands_are_registered_together() -> None:
    features = create_server().protocol.fm
    for method, command in ((protocol.CHAT, protocol.CMD_CHAT),
                            (protocol.CANCEL, protocol.CMD_CANCEL)):
        assert method in features.features and command in features.commands


def test_no_feature_translates_project_errors_itself() -> None:
    """The ~15 copies of ``except ParamsError: raise JsonRpcInvalidParams`` and ``except
    TurnRefused: raise refused_error`` are gone: handlers.py is the one place."""
    for path in LSP.glob("*.py"):
        if path.name == "handlers.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                caught = ast.unparse(node.type)
                raised = [ast.unparse(n.exc) for n in ast.walk(node)
                          if isinstance(n, ast.Raise) and n.exc is not None]
                translated = any("JsonRpc" in r or "refused_error" in r for r in raised)
                assert not (caught in ("ParamsError", "TurnRefused") and translated), (
                    f"{path.name}:{node.lineno} translates {caught} itself")
