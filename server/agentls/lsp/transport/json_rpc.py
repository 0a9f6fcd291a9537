"""pygls's protocol as AgentLS speaks it: UTF-8 positions preferred when the client offers
them, AgentLS's own methods' params kept as plain dicts (lsp/services/protocol.py parses them), and
every notification, question and error redacted of secrets on its way out (edits carry the
agent's changes unaltered; plain-dict answers skip cattrs's walk)."""

from __future__ import annotations

import json
from collections.abc import Generator
from typing import Any

from cattrs import Converter
from lsprotocol import types as lsp
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)

from agentls.lsp.services.protocol import plain_response
from agentls.policy.redaction import redact_data


class AgentProtocol(LanguageServerProtocol):
    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(
        self, params: lsp.InitializeParams
    ) -> Generator[Any, Any, lsp.InitializeResult]:
        _prefer_utf8(params.capabilities)
        return (yield from super().lsp_initialize(params))

    def _send_data(self, data: Any) -> None:
        # Every notification, question and error leaves through here with its secrets
        # redacted; edits (workspace/applyEdit, results) carry the agent's changes unaltered.
        method = getattr(data, "method", None)
        outgoing = method is not None and method != lsp.WORKSPACE_APPLY_EDIT
        if outgoing or getattr(data, "error", None) is not None:
            data = redact_data(json.loads(json.dumps(data, default=self._serialize_message)))
        super()._send_data(plain_response(data) if method is None else data)


def _prefer_utf8(capabilities: lsp.ClientCapabilities) -> None:
    """UTF-16 unless the client offers UTF-8 (pygls would take the client's first choice):
    reorder the offer before pygls negotiates, so the workspace and the answer agree."""
    general = capabilities.general
    if general is None or not general.position_encodings:
        return
    offered = [str(getattr(e, "value", e)) for e in general.position_encodings]
    if "utf-8" in offered:
        general.position_encodings = [lsp.PositionEncodingKind.Utf8] + [
            e for e, name in zip(general.position_encodings, offered, strict=True)
            if name != "utf-8"]


def converter() -> Converter:
    """pygls's converter, but AgentLS's own methods get their params as plain dicts."""
    made = default_converter()

    def keep_params(obj: dict[str, Any], cls: type) -> Any:
        return cls(**obj)

    made.register_structure_hook(JsonRPCRequestMessage, keep_params)
    made.register_structure_hook(JsonRPCNotification, keep_params)
    return made
