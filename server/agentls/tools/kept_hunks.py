"""Which of a change's hunks a text holds: the truth of a partial review.

An editor may keep some hunks of a proposed change and reject others (the Neovim plugin's
review, VS Code's refactor preview with some boxes unticked). Whatever it answers, the
document's text afterwards says what landed: it is the base with some hunks applied. The
hunks are the line hunks of base -> proposed (``line_opcodes``, as the edits were planned);
``kept_hunks`` finds, for each, whether the text holds its new lines or still the old ones,
or says the text is neither (the person also edited it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentls.tools.line_diff import line_opcodes, split_lines


@dataclass(frozen=True)
class Hunk:
    index: int  # 1-based, in file order
    line: int  # 1-based line of the base where it starts
    old: tuple[str, ...]  # the base's lines (endings kept)
    new: tuple[str, ...]  # the proposed lines


def hunks(base: str, proposed: str) -> list[Hunk]:
    a, b = split_lines(base), split_lines(proposed)
    out: list[Hunk] = []
    for tag, i1, i2, j1, j2 in line_opcodes(a, b):
        if tag != "equal":
            out.append(Hunk(len(out) + 1, i1 + 1, tuple(a[i1:i2]), tuple(b[j1:j2])))
    return out


def kept_hunks(base: str, proposed: str, now: str) -> list[bool] | None:
    """For each hunk of base -> proposed, whether ``now`` holds its new lines (True) or the
    base's (False); None when ``now`` is not the base with some of the hunks applied."""
    a, b, c = split_lines(base), split_lines(proposed), split_lines(now)
    # The text as segments: ("same", lines) or ("hunk", old, new).
    segments: list[tuple[Sequence[str], Sequence[str] | None]] = []
    for tag, i1, i2, j1, j2 in line_opcodes(a, b):
        segments.append((a[i1:i2], None) if tag == "equal" else (a[i1:i2], b[j1:j2]))
    # Positions in `now` reachable after each segment, with how they were reached; in
    # practice one or two, so this is linear in the text.
    reach: dict[int, tuple[int, bool | None]] = {0: (0, None)}
    trail: list[dict[int, tuple[int, bool | None]]] = []
    for old, new in segments:
        step: dict[int, tuple[int, bool | None]] = {}
        for pos in reach:
            options: list[tuple[Sequence[str], bool | None]] = (
                [(old, None)] if new is None else [(new, True), (old, False)])
            for lines, choice in options:
                end = pos + len(lines)
                if end not in step and c[pos:end] == list(lines):
                    step[end] = (pos, choice)
        if not step:
            return None
        trail.append(step)
        reach = step
    if len(c) not in reach:
        return None
    kept: list[bool] = []
    pos = len(c)
    for step in reversed(trail):
        prev, choice = step[pos]
        if choice is not None:
            kept.append(choice)
        pos = prev
    kept.reverse()
    return kept
