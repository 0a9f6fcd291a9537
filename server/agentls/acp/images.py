"""Whether the model takes images: the ``image`` prompt capability ACP's initialize
advertises (a quick hint from the configuration's layers), and the check of a prompt that
carries images against its session's model (``backends.<name>.images``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from acp import RequestError

if TYPE_CHECKING:
    from agentls.engine.host import EngineHost


def takes_images() -> bool:
    """Whether the model of the agent's start folder takes images (``backends.<name>.images``),
    read from the configuration's layers with only what they give validated, so the
    initialize answer stays quick. A hint for the client only: each prompt with an image is
    checked against its session's validated settings (``check_takes_images``)."""
    from agentls.settings import view as config_view

    try:
        view = config_view.read(Path.cwd())
    except Exception:  # a broken config is reported when a session opens the folder
        return False
    if view is None:  # only the full check can read these settings: no hint
        return False
    values = view.values
    return values.get("backends", {}).get(values.get("backend"), {}).get("images") is True


def check_takes_images(host: EngineHost, session_id: str) -> None:
    """Images go only to a model its settings say takes them; otherwise a clear refusal."""
    settings = host.agent.settings
    stored = host.store.get_session(session_id)
    name = stored.backend if stored is not None else settings.backend
    backend = settings.backends.get(name) or settings.active_backend
    if not backend.images:
        raise RequestError.invalid_params({"message": (
            f"the model {backend.model} (backend {name}) does not take images in AgentLS: "
            f"send the prompt without the image, or, if it is a vision model, set "
            f"backends.{name}.images = true")})
