"""Mode presets a front-end offers: what the agent may do in a turn (the tools it gets).

``ask`` answers from the code (reading and searching only), ``edit`` may also change files
(into the ChangeSet, shown for review), ``agent`` may also run commands (sandboxed, under the
permission policy). The permission policy and the fence apply in every mode; a preset only
narrows the toolbox.
"""

from __future__ import annotations

from dataclasses import dataclass

READ_TOOLS = ("list_files", "read_file", "search_text", "search_semantic", "git_status",
              "git_diff", "git_log")
EDIT_TOOLS = ("write_file", "edit_file", "apply_patch", "delete_file")


@dataclass(frozen=True)
class ModePreset:
    id: str
    name: str
    description: str
    tools: tuple[str, ...] | None  # None: every tool the settings allow

    def allows(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools


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
