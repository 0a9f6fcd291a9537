"""The conversation around chat turns: ``agentls/models``, ``agentls/setModel``,
``agentls/setMode``, ``agentls/turns`` and ``agentls/mentions`` (issue 29).

- ``agentls/models`` lists the backends and models the server can use and the modes; with a
  ``sessionId`` also that session's backend, model and mode. ``probe: false`` answers at once
  from the configuration (nothing asked over the network): for a header, or a picker's first
  rows while the probing request is out.
- ``agentls/setModel`` / ``agentls/setMode`` switch a session between turns; during a run the
  switch applies from the next turn, and the answer says so (``running``, ``message``).
- ``agentls/turns`` returns a session's turns display-ready, paged from the end
  (engine/display_history.py).
- ``agentls/mentions`` completes ``#file:``, ``#buffer``, ``@symbol``...
(engine/prompt/mentions.py).

The engine does the work (engine/model_choice.py, modes.py); this module parses and answers.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from agentls.lsp.services import protocol, protocol_params
from agentls.lsp.services.handlers import request
from agentls.lsp.services.protocol import ParamsError
from agentls.lsp.services.server_context import ServerContext

if TYPE_CHECKING:
    from agentls.engine.host import EngineHost
    from agentls.engine.sessions.store import SessionInfo


def _session(host: EngineHost, session_id: str) -> SessionInfo:
    from agentls.engine.sessions.store import SessionNotFound

    info = host.store.get_session(session_id)
    if info is None:
        raise ParamsError(str(SessionNotFound(session_id)))
    return info


def _options(host: EngineHost, info: SessionInfo, message: str) -> dict[str, Any]:
    from agentls.engine import model_choice as models
    from agentls.engine import modes

    config = host.agent.settings.backends.get(info.backend)
    running = host.agent.queue.busy(info.id)
    if running:
        message += " (a run is on: it applies from the next turn)"
    return {"sessionId": info.id, "backend": info.backend,
            "model": models.session_model(info, config.model if config else info.model),
            "mode": modes.of_session(info).id, "running": running, "message": message}


async def models_request(ls: ServerContext, params: Any) -> dict[str, Any]:
    from agentls.engine import model_choice as models
    from agentls.engine import modes

    session_id, probe = protocol_params.parse_models_params(params)
    host = await ls.engine()
    listing = await models.list_models(host.agent.settings, probe=probe)
    out: dict[str, Any] = {
        "backends": [protocol.camel_keys(b.to_dict()) for b in listing],
        "modes": [m.to_dict() for m in modes.MODE_PRESETS],
        "defaultMode": modes.DEFAULT_MODE,
    }
    if session_id:
        info = _session(host, session_id)
        out["session"] = _options(host, info, "")
    return out


async def set_model(ls: ServerContext, params: Any) -> dict[str, Any]:
    from agentls.engine import model_choice as models

    session_id, model, backend = protocol_params.parse_session_option(params, protocol.SET_MODEL,
                                                               "model")
    host = await ls.engine()
    info = _session(host, session_id)
    backend = backend or info.backend
    listing = await models.list_models(host.agent.settings, only=backend)
    try:
        entry = models.check_model(listing, backend, model)
    except models.UnknownModel as exc:
        raise ParamsError(str(exc)) from None
    info = models.set_session_model(host.store, session_id, backend, model)
    said = f"model: {model} ({backend})"
    if entry.status not in ("available",):
        said += f"; could not check it: {entry.status}, {entry.detail}"
    return _options(host, info, said)


async def set_mode(ls: ServerContext, params: Any) -> dict[str, Any]:
    from agentls.engine import modes

    session_id, name, _ = protocol_params.parse_session_option(params, protocol.SET_MODE, "mode")
    host = await ls.engine()
    _session(host, session_id)
    try:
        mode = modes.set_session_mode(host.store, session_id, name)
    except modes.UnknownMode as exc:
        raise ParamsError(str(exc)) from None
    return _options(host, _session(host, session_id), f"mode: {mode.id} ({mode.description})")


async def turns(ls: ServerContext, params: Any) -> dict[str, Any]:
    from agentls.engine import display_history

    session_id, limit, before = protocol_params.parse_turns_params(params)
    host = await ls.engine()
    _session(host, session_id)
    found = await asyncio.to_thread(display_history.page, host.store, session_id, limit=limit,
                                    before=before)
    return found.to_dict()


async def mentions(ls: ServerContext, params: Any) -> dict[str, Any]:
    from agentls.engine.prompt.mentions import candidates

    query, kinds, limit = protocol_params.parse_mentions_params(params)
    host = await ls.engine()
    workspace = ls.new_workspace()
    items = await asyncio.to_thread(candidates, query, kinds, limit, workspace,
                                    lambda: host.agent.search_hub.get(workspace))
    return {"items": items}


def setup(server: ServerContext) -> None:
    for method, handler in ((protocol.MODELS, models_request), (protocol.SET_MODEL, set_model),
                            (protocol.SET_MODE, set_mode), (protocol.TURNS, turns),
                            (protocol.MENTIONS, mentions)):
        request(server, method)(handler)
