"""What a session offers to switch in the client: its mode (the engine's presets,
engine/modes.py) and its model (one per configured model server), as ACP session modes and
session config options (the ``mode`` and ``model`` selectors)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp.schema import (
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

if TYPE_CHECKING:
    from agentls.settings.config import Settings


def model_servers(settings: Settings) -> dict[str, Any]:
    """The backends a chat session can use (model servers; agent CLIs edit files themselves)."""
    return {name: b for name, b in settings.backends.items() if b.type == "openai"}


def modes(current: str) -> SessionModeState:
    from agentls.engine.modes import MODE_PRESETS

    return SessionModeState(current_mode_id=current, available_modes=[
        SessionMode(id=m.id, name=m.name, description=m.description) for m in MODE_PRESETS])


def config_options(settings: Settings, mode: str, backend: str | None) -> list[Any]:
    from agentls.engine.modes import MODE_PRESETS

    return [
        SessionConfigOptionSelect(
            type="select", id="mode", name="Mode", category="mode", current_value=mode,
            options=[SessionConfigSelectOption(value=m.id, name=m.name,
                                               description=m.description)
                     for m in MODE_PRESETS]),
        SessionConfigOptionSelect(
            type="select", id="model", name="Model", category="model",
            current_value=backend or settings.backend,
            options=[SessionConfigSelectOption(value=name, name=f"{name} ({b.model})",
                                               description=b.base_url)
                     for name, b in sorted(model_servers(settings).items())]),
    ]
