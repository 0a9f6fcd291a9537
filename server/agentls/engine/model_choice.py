"""Which backends and models a session may use, and switching a session's model.

The listing asks each configured model server (``type = "openai"``) for its models once
(``GET /models``, llm/probe.py, the same look as ``agentls backends``), all at once, each
within PROBE_TIMEOUT_S: a server that does not answer costs that bound, never more, and
never delays the others. ``probe=False`` answers at once from the configuration alone (the
configured model of each backend, ``unchecked``), for what only needs the names (a header, a
picker's first rows). Agent-CLI backends are listed as not usable for chat sessions (they
edit files themselves; ``agentls run`` uses them).

A session's model is stored with the session (its ``backend`` and ``model`` columns); once
the person picks one (``set_session_model``) the session keeps it (``model_chosen`` in its
metadata), else it follows the backend's configured model. The switch applies from the next
turn: a run reads the session when it starts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from agentls.settings import config

if TYPE_CHECKING:
    from agentls.engine.sessions.store import SessionInfo, SessionStore

PROBE_TIMEOUT_S = 1.0  # per backend; the probes run side by side
CHOSEN_KEY = "model_chosen"


@dataclass
class BackendModels:
    name: str
    type: str
    model: str  # the configured model
    models: list[str] = field(default_factory=list)  # served; the configured one first
    status: str = "available"  # available | unauthenticated | unreachable | unchecked | cli
    detail: str = ""
    active: bool = False  # the configured default backend
    any_model: bool = False  # the server answers whatever model name a request carries
    needs_key: bool = False
    key_set: bool = False
    base_url: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class UnknownModel(ValueError):
    """A model (or backend) the session cannot use; the message names what can be."""


async def list_models(settings: config.Settings, *, env: Mapping[str, str] | None = None,
                      timeout: float = PROBE_TIMEOUT_S,
                      only: str | None = None, probe: bool = True) -> list[BackendModels]:
    """Every configured backend with the models it serves (``only``: that backend alone,
    the others listed unprobed, as ``unchecked``; ``probe=False``: none probed)."""
    if not probe:
        return [_unprobed(settings, n, b, env) for n, b in settings.backends.items()]
    # The model client's modules load in a thread: not on the event loop, where the
    # editor's other requests (a history page) would wait behind their import.
    await asyncio.to_thread(_load_client)
    from agentls.llm.probe import probe_models

    async def one(name: str, backend: config.BackendConfig) -> BackendModels:
        key = config.api_key(backend, env)
        needs_key = (backend.api_key_env or "none").lower() != "none"
        entry = BackendModels(name, backend.type, backend.model, [backend.model],
                              active=settings.backend == name, needs_key=needs_key,
                              key_set=key is not None, base_url=backend.base_url)
        if backend.type != "openai":
            entry.status = "cli"
            entry.detail = (f"the {backend.type} agent CLI edits files itself: use it with "
                            "`agentls run`, not in editor chat")
            return entry
        probe = await probe_models(backend.base_url, key, timeout=timeout)
        if probe.outcome == "ok":
            entry.any_model = probe.any_model
            entry.models = [backend.model] + [m for m in probe.models if m != backend.model]
            if not probe.serves(backend.model):
                entry.detail = f"the configured model {backend.model!r} is not served here"
        elif probe.outcome == "auth":
            entry.status = "unauthenticated"
            entry.detail = f"HTTP {probe.status_code}: {probe.message}" + (
                f" ({backend.api_key_env} is not set)" if needs_key and key is None else "")
        elif probe.outcome == "http_error" and probe.status_code == 404:
            entry.status = "unchecked"
            entry.detail = "the server does not list its models"
        else:
            entry.status = "unreachable"
            entry.detail = probe.message
        return entry

    started = time.monotonic()

    async def skipped(name: str, backend: config.BackendConfig) -> BackendModels:
        return _unprobed(settings, name, backend, env)

    jobs = [one(n, b) if only is None or n == only else skipped(n, b)
            for n, b in settings.backends.items()]
    found = await asyncio.wait_for(asyncio.gather(*jobs), timeout + 1.0 - (
        time.monotonic() - started))
    return list(found)


def _unprobed(settings: config.Settings, name: str, backend: config.BackendConfig,
              env: Mapping[str, str] | None) -> BackendModels:
    """A backend as configured, not asked: its configured model, ``unchecked`` (or ``cli``)."""
    needs_key = (backend.api_key_env or "none").lower() != "none"
    cli = backend.type != "openai"
    return BackendModels(name, backend.type, backend.model, [backend.model],
                         status="cli" if cli else "unchecked",
                         detail="" if cli else "not asked for its models",
                         active=settings.backend == name, needs_key=needs_key,
                         key_set=config.api_key(backend, env) is not None,
                         base_url=backend.base_url)


def _load_client() -> None:
    import httpx2  # noqa: F401  (what probe_models uses)

    import agentls.llm.openai_compat
    import agentls.llm.probe  # noqa: F401


def check_model(listing: list[BackendModels], backend: str, model: str) -> BackendModels:
    """The listing's entry for ``backend`` when it can serve ``model``; else UnknownModel
    naming the backends and models that can be used."""
    entry = next((b for b in listing if b.name == backend), None)
    usable = [b for b in listing if b.status != "cli"]
    if entry is None or entry.status == "cli":
        names = ", ".join(b.name for b in usable) or "none"
        why = "is not configured" if entry is None else "is an agent CLI, not a model server"
        raise UnknownModel(f"backend {backend!r} {why}; the backends chat can use: {names}")
    if entry.status == "available" and not entry.any_model and model not in entry.models \
            and f"{model}:latest" not in entry.models:
        raise UnknownModel(f"backend {backend!r} does not serve {model!r}; it serves: "
                           + ", ".join(entry.models))
    return entry


def set_session_model(store: SessionStore, session_id: str, backend: str,
                      model: str) -> SessionInfo:
    """Pin the session to ``backend``/``model`` (checked by the caller with check_model)."""
    from agentls.engine.sessions.store import SessionNotFound

    if not store.set_session_backend(session_id, backend, model):
        raise SessionNotFound(session_id)
    store.set_session_metadata(session_id, **{CHOSEN_KEY: True})
    info = store.get_session(session_id)
    if info is None:
        raise SessionNotFound(session_id)
    return info


def session_model(info: SessionInfo, configured: str) -> str:
    """The model a run of this session asks: the chosen one, else the backend's."""
    return info.model if info.metadata.get(CHOSEN_KEY) and info.model else configured
