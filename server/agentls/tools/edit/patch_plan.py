"""Planning an "apply_patch" (V4A) patch: the new text of every file it touches, found the way
codex-rs/apply-patch seeks (exact, then trailing whitespace, then both ends trimmed, then
punctuation normalised), all-or-nothing. The format and its parser are in ``patch.py``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from agentls.tools.edit.closest_window import closest_window, format_closest
from agentls.tools.edit.patch import (
    ADD_FILE,
    CODEX_PUNCTUATION,
    END_OF_FILE,
    WHITESPACE,
    AddFile,
    DeleteFile,
    Patch,
    PatchError,
    UpdateChunk,
    UpdateFile,
    clip,
)


@dataclass(frozen=True)
class FileChange:
    """One planned change. ``update`` with ``new_path`` is a move: write there, remove ``path``.

    An ``Add File`` over an existing file (the reference overwrites it) is planned as
    ``update``, so the caller never creates a file that already exists.
    """

    kind: Literal["add", "update", "delete"]
    path: str
    new_path: str | None = None
    new_text: str | None = None


def plan_patch(patch: Patch, read: Callable[[str], str | None]) -> list[FileChange]:
    """The changes the patch makes, in order, or a PatchError if any part of it fails.

    ``read(path)`` gives a file's current text, or None when there is no such file. Later
    hunks see what earlier hunks of the same patch did (an update after an add, say).
    """
    planned: dict[str, str | None] = {}

    def current(path: str) -> str | None:
        return planned[path] if path in planned else read(path)

    changes: list[FileChange] = []
    for hunk in patch.hunks:
        if isinstance(hunk, AddFile):
            kind: Literal["add", "update"] = "add" if current(hunk.path) is None else "update"
            changes.append(FileChange(kind, hunk.path, None, hunk.contents))
            planned[hunk.path] = hunk.contents
        elif isinstance(hunk, DeleteFile):
            if current(hunk.path) is None:
                raise PatchError(
                    f"Cannot delete '{hunk.path}' (patch line {hunk.line}): there is no such"
                    " file (directories cannot be deleted with a patch). No changes were made.",
                    path=hunk.path,
                )
            changes.append(FileChange("delete", hunk.path))
            planned[hunk.path] = None
        else:
            original = current(hunk.path)
            if original is None:
                raise PatchError(
                    f"Cannot update '{hunk.path}' (patch line {hunk.line}): there is no such"
                    f" file. Check the path, or create it with '{ADD_FILE}{hunk.path}'."
                    " No changes were made.",
                    path=hunk.path,
                )
            new_text = _updated_text(original, hunk)
            # Moving a file onto itself is an update; the reference would delete it.
            destination = hunk.move_to if hunk.move_to not in (None, hunk.path) else None
            changes.append(FileChange("update", hunk.path, destination, new_text))
            if destination is None:
                planned[hunk.path] = new_text
            else:
                planned[hunk.path] = None
                planned[destination] = new_text
    return changes


@dataclass
class _SourceLine:
    text: str
    ending: str | None


def _split_source(text: str) -> tuple[list[_SourceLine], str]:
    """Lines with their own endings, and the file's preferred ending (its first one)."""
    pieces = text.split("\n")
    lines = [
        _SourceLine(piece[:-1], "\r\n") if piece.endswith("\r") else _SourceLine(piece, "\n")
        for piece in pieces[:-1]
    ]
    if pieces[-1]:
        lines.append(_SourceLine(pieces[-1], None))
    preferred = lines[0].ending if lines and lines[0].ending else "\n"
    return lines, preferred


def _updated_text(original: str, hunk: UpdateFile) -> str:
    source, preferred = _split_source(original)
    texts = [line.text for line in source]
    replacements = _replacements(texts, hunk)
    result: list[_SourceLine] = []
    position = 0
    for start, old_len, new_lines in replacements:
        if start < position:
            raise PatchError(
                f"In '{hunk.path}', two sections of the patch change the same lines. Merge them"
                " into one section. No changes were made.",
                path=hunk.path,
            )
        result.extend(source[position:start])
        result.extend(_SourceLine(text, preferred) for text in new_lines)
        position = start + old_len
    result.extend(source[position:])
    # Updates always end with a newline, as the reference's do.
    return "".join(line.text + (line.ending or preferred) for line in result)


def _replacements(lines: list[str], hunk: UpdateFile) -> list[tuple[int, int, Sequence[str]]]:
    replacements: list[tuple[int, int, Sequence[str]]] = []
    line_index = 0
    for number, chunk in enumerate(hunk.chunks, start=1):
        if chunk.context is not None:
            found = _seek(lines, [chunk.context], line_index, end_of_file=False)
            if found is None:
                raise _not_found(lines, hunk, number, chunk, [chunk.context], line_index, True)
            line_index = found + 1

        if not chunk.old_lines:
            replacements.append((len(lines), 0, chunk.new_lines))
            continue

        pattern: Sequence[str] = chunk.old_lines
        new_slice: Sequence[str] = chunk.new_lines
        found = _seek(lines, pattern, line_index, chunk.end_of_file)
        if found is None and pattern[-1] == "":
            # A trailing empty line stands for the file's final newline.
            pattern = pattern[:-1]
            if new_slice and new_slice[-1] == "":
                new_slice = new_slice[:-1]
            found = _seek(lines, pattern, line_index, chunk.end_of_file)
        if found is None:
            raise _not_found(lines, hunk, number, chunk, chunk.old_lines, line_index, False)

        # Context lines stay as the file has them; only the runs between them are replaced.
        old_start = new_start = 0
        for old_context, new_context in chunk.context_pairs:
            if old_context >= len(pattern) or new_context >= len(new_slice):
                break
            if old_start != old_context or new_start != new_context:
                replacements.append(
                    (found + old_start, old_context - old_start, new_slice[new_start:new_context])
                )
            old_start, new_start = old_context + 1, new_context + 1
        if old_start != len(pattern) or new_start != len(new_slice):
            replacements.append(
                (found + old_start, len(pattern) - old_start, new_slice[new_start:])
            )
        line_index = found + len(pattern)
    replacements.sort(key=lambda replacement: replacement[0])
    return replacements


def _seek(
    lines: Sequence[str], pattern: Sequence[str], start: int, end_of_file: bool
) -> int | None:
    """Where ``pattern`` starts at or after ``start``: exact, then ever looser comparisons.

    With ``end_of_file`` only the very end of the file is tried, as in the reference.
    """
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    first = len(lines) - len(pattern) if end_of_file else start
    last = len(lines) - len(pattern)
    if first > last:
        return None
    for normalize in (_as_is, _trim_end, _trim, _codex_normalize):
        window = [normalize(line) for line in lines[first:]]
        wanted = [normalize(line) for line in pattern]
        head = wanted[0]
        for offset in range(last - first + 1):
            if window[offset] == head and window[offset : offset + len(wanted)] == wanted:
                return first + offset
    return None


def _as_is(line: str) -> str:
    return line


def _trim_end(line: str) -> str:
    return line.rstrip(WHITESPACE)


def _trim(line: str) -> str:
    return line.strip(WHITESPACE)


def _codex_normalize(line: str) -> str:
    return line.strip(WHITESPACE).translate(CODEX_PUNCTUATION)


def _not_found(
    lines: list[str],
    hunk: UpdateFile,
    number: int,
    chunk: UpdateChunk,
    pattern: Sequence[str],
    line_index: int,
    is_context_line: bool,
) -> PatchError:
    section = f"section {number} (the '@@' at patch line {chunk.line})"
    if is_context_line:
        what = f"its context line '@@ {clip(pattern[0])}' was not found"
    else:
        shown = "\n".join(pattern[:20]) + ("\n..." if len(pattern) > 20 else "")
        what = f"these lines were not found:\n{shown}"
    parts = [f"Cannot update '{hunk.path}': in {section}, {what}"]
    earlier = _seek(lines, pattern, 0, end_of_file=False) if line_index else None
    if earlier is not None and earlier < line_index:
        parts.append(
            f"They are at line {earlier + 1}, before where the previous section ended: the"
            " sections of one file must come in the order of the file."
        )
    elif chunk.end_of_file:
        parts.append(f"The section ends with '{END_OF_FILE}', so it must match the file's end.")
    window = closest_window(lines, pattern)
    if window is not None:
        parts.append(format_closest(window))
    parts.append(
        "Re-read the file and copy the context and '-' lines exactly. No changes were made."
    )
    return PatchError("\n".join(parts), path=hunk.path)
