"""Level 2 of the prompt: the person's instructions for this workspace (``AGENTS.md``,
``.agentls/instructions.md``). The levels are described in :mod:`agentls.engine.context`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentls.engine.file_text import IncludedFile, cut_bytes, read_inside
from agentls.tools.workspace import Workspace

INSTRUCTION_FILES = ("AGENTS.md", ".agentls/instructions.md")
INSTRUCTIONS_CAP_BYTES = 32 * 1024


@dataclass(frozen=True)
class InstructionFile:
    path: str
    abs: Path
    text: str
    size: int  # bytes on disk
    cut: bool


@dataclass(frozen=True)
class Instructions:
    """Level 2: the person's own instructions for this workspace."""

    files: tuple[InstructionFile, ...] = ()

    def render(self) -> str:
        if not self.files:
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
            parts.append(f"## {item.path}\n{body}")
        return "\n\n".join(parts)

    def included_files(self) -> tuple[IncludedFile, ...]:
        return tuple(
            IncludedFile(f.path, f.abs, f.text, "the workspace instructions")
            for f in self.files
            if not f.cut
        )


def load_instructions(ws: Workspace) -> Instructions:
    """Read ``AGENTS.md`` and ``.agentls/instructions.md`` of every root, each capped.

    They are read straight from disk, not through the fence (``.agentls/`` is denied to the
    model's tools, but these are the person's own words); a path that resolves outside its
    root, or to anything but a regular file, is skipped.
    """
    found: list[InstructionFile] = []
    seen: set[Path] = set()
    for root in ws.roots:
        for rel in INSTRUCTION_FILES:
            read = read_inside(root, root / rel, INSTRUCTIONS_CAP_BYTES + 1)
            if read is None or read.real in seen:
                continue
            seen.add(read.real)
            text, cut = cut_bytes(read.data, read.size, INSTRUCTIONS_CAP_BYTES)
            if not text.strip():
                continue
            found.append(InstructionFile(ws.display_path(root / rel), read.real, text,
                                         read.size, cut))
    return Instructions(tuple(found))
