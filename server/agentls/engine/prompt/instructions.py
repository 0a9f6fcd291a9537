"""Level 2 of the prompt: the person's instructions for this workspace (``AGENTS.md`` at the
root and in sub-folders, ``.agentls/instructions.md``; ``CLAUDE.md`` and
``.github/copilot-instructions.md`` where a root has no ``AGENTS.md``). The levels are
described in :mod:`agentls.engine.prompt.levels`.

Nested ``AGENTS.md`` files follow the agents.md convention: each applies to the files under its
folder, and the one closest to a file wins. They are all loaded once per session (the level
must not change between iterations) with their scope named, so the model applies the closest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentls.engine.prompt.file_text import IncludedFile, cut_bytes, read_inside
from agentls.engine.prompt.nested_agents import nested_agents_files
from agentls.workspace.fence import Workspace

INSTRUCTION_FILES = ("AGENTS.md", ".agentls/instructions.md")
# Read only where a root has no AGENTS.md (what other agents' users already wrote).
FALLBACK_FILES = ("CLAUDE.md", ".github/copilot-instructions.md")
INSTRUCTIONS_CAP_BYTES = 32 * 1024
# All instruction files together; nested ones beyond it are named, for the model to read.
INSTRUCTIONS_TOTAL_CAP_BYTES = 64 * 1024


@dataclass(frozen=True)
class InstructionFile:
    path: str
    abs: Path
    text: str
    size: int  # bytes on disk
    cut: bool
    scope: str = ""  # folder a nested AGENTS.md applies to ("src/api/"); "" = the whole root


@dataclass(frozen=True)
class Instructions:
    """Level 2: the person's own instructions for this workspace."""

    files: tuple[InstructionFile, ...] = ()
    not_included: tuple[str, ...] = ()  # nested AGENTS.md paths beyond the total cap

    def render(self) -> str:
        if not self.files and not self.not_included:
            return ""
        parts = [
            "# Workspace instructions\n"
            "The person who owns this workspace wrote these. Follow them; they take precedence "
            "over the general rules above, and the person's messages in this conversation take "
            "precedence over them."
        ]
        for item in self.files:
            body = item.text.rstrip("\n")
            if item.cut:
                body += (
                    f"\n\n[... cut: {item.path} is {item.size:,} bytes; only the first "
                    f"{INSTRUCTIONS_CAP_BYTES // 1024} KiB are included]"
                )
            heading = f"## {item.path}"
            if item.scope:
                heading += (f" (applies to files under {item.scope}; where it disagrees with "
                            "instructions of a parent folder, it wins)")
            parts.append(f"{heading}\n{body}")
        if self.not_included:
            listed = ", ".join(self.not_included)
            parts.append(f"More AGENTS.md files apply to their folders: {listed}. Read the "
                         "one closest to a file (read_file) before changing files there.")
        return "\n\n".join(parts)

    def summary(self) -> str:
        """One line for people: which files were loaded (`agentls run -v`, the LSP log)."""
        if not self.files and not self.not_included:
            return "instructions: none (no AGENTS.md, CLAUDE.md, .github/copilot-instructions.md "\
                "or .agentls/instructions.md)"
        names = [f.path + (" (cut)" if f.cut else "") for f in self.files]
        names += [f"{p} (too much in all: named, not included)" for p in self.not_included]
        return "instructions: " + ", ".join(names)

    def included_files(self) -> tuple[IncludedFile, ...]:
        return tuple(
            IncludedFile(f.path, f.abs, f.text, "the workspace instructions")
            for f in self.files
            if not f.cut
        )


def load_instructions(ws: Workspace) -> Instructions:
    """Read the instruction files of every root, each capped, nested ones after the root's.

    They are read straight from disk, not through the fence (``.agentls/`` is denied to the
    model's tools, but these are the person's own words); a path that resolves outside its
    root, or to anything but a regular file, is skipped.
    """
    found: list[InstructionFile] = []
    more: list[str] = []
    seen: set[Path] = set()
    total = 0
    for root in ws.roots:
        names = list(INSTRUCTION_FILES)
        with ws.listing():
            nested = nested_agents_files(ws, root)
        if not (root / "AGENTS.md").is_file():
            names[1:1] = FALLBACK_FILES
        for rel in [*names, *nested]:
            scope = "" if rel in names else ws.display_path(root / rel).rsplit("/", 1)[0] + "/"
            read = read_inside(root, root / rel, INSTRUCTIONS_CAP_BYTES + 1)
            if read is None or read.real in seen:
                continue
            seen.add(read.real)
            text, cut = cut_bytes(read.data, read.size, INSTRUCTIONS_CAP_BYTES)
            if not text.strip():
                continue
            shown = ws.display_path(root / rel)
            if scope and total + len(text.encode()) > INSTRUCTIONS_TOTAL_CAP_BYTES:
                more.append(shown)
                continue
            total += len(text.encode())
            found.append(InstructionFile(shown, read.real, text, read.size, cut, scope))
    return Instructions(tuple(found), tuple(more))
