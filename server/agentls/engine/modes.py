"""Mode presets a front-end offers: what the agent may do in a turn (the tools it gets).

``ask`` answers from the code (reading and searching only), ``edit`` may also change files
(into the ChangeSet, shown for review), ``agent`` may also run commands (sandboxed, under the
permission policy). The permission policy and the fence apply in every mode; a preset only
narrows the toolbox.

A stored session may keep its mode in its metadata (``permission_mode``, set by the editor's
``agentls/setMode``); a run reads it when it starts, so a switch during a run applies from
the next turn. Sessions without one run as ``agent``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentls.engine.sessions.store import SessionInfo, SessionStore

READ_TOOLS = ("list_files", "read_file", "search_text", "search_semantic", "git_status",
              "git_diff", "git_log", "diagnostics", "definition", "references",
              "workspace_symbols", "hover")
EDIT_TOOLS = ("write_file", "edit_file", "apply_patch", "delete_file")
SHELL_TOOL = "shell_exec"
METADATA_KEY = "permission_mode"


@dataclass(frozen=True)
class ModePreset:
    id: str
    name: str
    description: str
    tools: tuple[str, ...] | None  # None: every tool the settings allow

    def allows(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools

    def to_dict(self) -> dict[str, Any]:
        """As the editor lists it (lsp/services/protocol.py ``ModeOption``)."""
        return {"name": self.id, "label": self.name, "description": self.description,
                "writes": self.allows(EDIT_TOOLS[0]), "commands": self.allows(SHELL_TOOL)}


MODE_PRESETS: tuple[ModePreset, ...] = (
    ModePreset("ask", "Ask", "Answers from the code: reads and searches, changes nothing.",
               READ_TOOLS),
    ModePreset("edit", "Edit", "Reads and proposes file changes for your review; runs no "
               "commands.", READ_TOOLS + EDIT_TOOLS),
    ModePreset("agent", "Agent", "Reads, proposes changes and runs commands (sandboxed) to "
               "check them.", None),
)
DEFAULT_MODE = "agent"


def mode_preset(mode_id: str) -> ModePreset | None:
    return next((m for m in MODE_PRESETS if m.id == mode_id), None)


class UnknownMode(ValueError):
    def __init__(self, mode_id: object) -> None:
        super().__init__(f"no mode {mode_id!r}; the modes are "
                         + ", ".join(f"{m.id} ({m.description})" for m in MODE_PRESETS))


def get(mode_id: str) -> ModePreset:
    preset = mode_preset(mode_id)
    if preset is None:
        raise UnknownMode(mode_id)
    return preset


def of_session(info: SessionInfo) -> ModePreset:
    """The stored session's mode (none stored: ``agent``)."""
    return (mode_preset(str(info.metadata.get(METADATA_KEY, DEFAULT_MODE)))
            or get(DEFAULT_MODE))


def set_session_mode(store: SessionStore, session_id: str, mode_id: str) -> ModePreset:
    """Switch the stored session's mode; its next run uses it. Raises UnknownMode, or
    ``SessionNotFound`` for a session that is gone."""
    from agentls.engine.sessions.store import SessionNotFound

    preset = get(mode_id)
    if not store.set_session_metadata(session_id, **{METADATA_KEY: preset.id}):
        raise SessionNotFound(session_id)
    return preset


def allowed_tools(preset: ModePreset, requested: Iterable[str] | None) -> list[str] | None:
    """A run's toolbox: what the caller asked for (None: every tool), within the preset."""
    if preset.tools is None:
        return None if requested is None else list(requested)
    if requested is None:
        return list(preset.tools)
    return [t for t in requested if preset.allows(t)]
