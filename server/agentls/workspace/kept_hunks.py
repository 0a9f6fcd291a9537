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

from agentls.workspace.line_diff import Opcode, line_opcodes, split_lines


@dataclass(frozen=True)
class Hunk:
    index: int  # 1-based, in file order
    line: int  # 1-based line of the base where it starts
    old: tuple[str, ...]  # the base's lines (endings kept)
    new: tuple[str, ...]  # the proposed lines


def hunks(base: str, proposed: str) -> list[Hunk]:
    a, b = split_lines(base), split_lines(proposed)
    return _hunks(a, b, line_opcodes(a, b))


def kept_hunks(base: str, proposed: str, now: str) -> list[bool | None] | None:
    """For each hunk of base -> proposed, whether ``now`` holds its new lines (True), the
    base's (False), or other lines where it was (None: the person edited it); None when the
    lines between the hunks do not match (the text was edited elsewhere)."""
    a, b = split_lines(base), split_lines(proposed)
    return _kept(a, b, split_lines(now), line_opcodes(a, b))


def hunks_and_kept(base: str, proposed: str,
                   now: str) -> tuple[list[Hunk], list[bool | None] | None]:
    """``hunks`` and ``kept_hunks`` together, with the line diff computed once."""
    a, b = split_lines(base), split_lines(proposed)
    ops = line_opcodes(a, b)
    return _hunks(a, b, ops), _kept(a, b, split_lines(now), ops)


def _hunks(a: list[str], b: list[str], ops: list[Opcode]) -> list[Hunk]:
    out: list[Hunk] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag != "equal":
            out.append(Hunk(len(out) + 1, i1 + 1, tuple(a[i1:i2]), tuple(b[j1:j2])))
    return out


def _kept(a: list[str], b: list[str], c: list[str],
          ops: list[Opcode]) -> list[bool | None] | None:
    # The text as segments: (old, None) for unchanged lines, (old, new) for a hunk.
    segments: list[tuple[Sequence[str], Sequence[str] | None]] = []
    for tag, i1, i2, j1, j2 in ops:
        segments.append((a[i1:i2], None) if tag == "equal" else (a[i1:i2], b[j1:j2]))
    # Positions in `now` reachable after each segment, with how they were reached; in
    # practice one or two, so this is linear in the text.
    reach: dict[int, tuple[int, str]] = {0: (0, "same")}
    trail: list[dict[int, tuple[int, str]]] = []
    for n, (old, new) in enumerate(segments):
        step: dict[int, tuple[int, str]] = {}
        for pos in reach:
            options: list[tuple[Sequence[str], str]] = (
                [(old, "same")] if new is None else [(new, "kept"), (old, "rejected")])
            for lines, choice in options:
                end = pos + len(lines)
                if end not in step and c[pos:end] == list(lines):
                    step[end] = (pos, choice)
            if new is not None and not step:
                stop = _edited_end(c, pos, segments[n + 1][0] if n + 1 < len(segments) else None)
                if stop is not None:
                    step[stop] = (pos, "edited")
        if not step:
            return None
        trail.append(step)
        reach = step
    if len(c) not in reach:
        return None
    kept: list[bool | None] = []
    pos = len(c)
    for step in reversed(trail):
        prev, choice = step[pos]
        if choice != "same":
            kept.append({"kept": True, "rejected": False}.get(choice))
        pos = prev
    kept.reverse()
    return kept


def _edited_end(c: Sequence[str], pos: int, following: Sequence[str] | None) -> int | None:
    """Where an edited hunk that starts at ``pos`` ends: where the unchanged lines after it
    are found next (the end of the text when it is the last segment)."""
    if following is None:
        return len(c)
    if not following:
        return None
    width = len(following)
    first = following[0]
    for end in range(pos, len(c) - width + 1):
        if c[end] == first and list(c[end:end + width]) == list(following):
            return end
    return None
