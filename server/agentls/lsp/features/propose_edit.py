"""``agentls/proposeEdit``: text the person picked in the chat (a code block's *Apply*)
proposed as the replacement of a range of an open document, through the same review as an
agent's edit: a ChangeSet sent by ``delivery.deliver`` (the one path: planned into one
``workspace/applyEdit`` with ``needsConfirmation`` where the client supports it, so VS Code
opens its refactor preview; the answer checked against the documents and recorded in the
chat's session, so the model hears what became of it).

Params ``{sessionId, uri, range, text}``; answers ``{applied, failureReason?}``. A document
the editor has not opened, or one the workspace fence hides, is refused with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from agentls.lsp.services import documents, protocol, protocol_params
from agentls.lsp.services.handlers import request

if TYPE_CHECKING:
    from agentls.lsp.services.server_context import ServerContext

LABEL = "AgentLS: apply the code block"


async def propose_edit(ls: ServerContext, params: Any) -> dict[str, Any]:
    from agentls.lsp.services import delivery
    from agentls.workspace.changeset import ChangeSet
    from agentls.workspace.fence import FenceError

    session_id, uri, rng, text = protocol_params.parse_propose_edit(params)
    document = ls.workspace.text_documents.get(uri)
    path = documents.path_of(uri)
    if document is None or path is None:
        raise JsonRpcInvalidParams(f"{uri} is not open in the editor: open the file, select "
                                   "what the code replaces, then Apply again")
    host = await ls.engine()
    if host.store.get_session(session_id) is None:
        raise JsonRpcInvalidParams(f"no session {session_id}: apply a code block of a chat "
                                   "in this workspace")
    workspace = ls.new_workspace()
    try:
        target = workspace.resolve(str(path))
    except FenceError as exc:
        raise JsonRpcInvalidParams(f"AgentLS does not change {path.name}: {exc}") from None
    current = document.source
    start, end = document.offset_at_position(rng.start), document.offset_at_position(rng.end)
    if start > end:
        raise JsonRpcInvalidParams("'range' ends before it starts")
    changes = ChangeSet()
    changes.update(target.abs, current[:start] + text + current[end:],
                   base=workspace.base_of(target))
    outcome = await delivery.deliver(ls, host.store, delivery.Outgoing(
        session_id, changes, None, workspace.display_path, label=LABEL))
    out: dict[str, Any] = {"applied": bool(outcome.applied)}
    reason = outcome.message or outcome.failure_reason
    if reason:
        out["failureReason"] = reason
    return out


def setup(server: ServerContext) -> None:
    request(server, protocol.PROPOSE_EDIT)(propose_edit)
