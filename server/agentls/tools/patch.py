"""The "apply_patch" (V4A) format of OpenAI Codex: parse a patch, then plan the file changes.

A port of the behaviour of codex-rs/apply-patch (parser.rs, seek_sequence.rs and the update
logic of lib.rs / text_file.rs), with one deliberate difference: planning is all-or-nothing.
Nothing here touches the disk; ``plan_patch`` reads through a callable and returns the new
texts, so the tool layer can read through the workspace overlay and write into a ChangeSet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from agentls.tools.closest_window import closest_window, format_closest

BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
ADD_FILE = "*** Add File: "
DELETE_FILE = "*** Delete File: "
UPDATE_FILE = "*** Update File: "
MOVE_TO = "*** Move to: "
END_OF_FILE = "*** End of File"
_HEREDOC_OPENERS = ("<<EOF", "<<'EOF'", '<<"EOF"')

# What Rust's str::trim() removes (Unicode White_Space), so markers are trimmed the same way.
_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(chr(code) for code in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)
# seek_sequence's last pass: the punctuation it folds to ASCII, exactly that set.
_CODEX_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000",
            " ",
        ),
    }
)
_SYNTAX_HELP = (
    "A patch looks like:\n*** Begin Patch\n*** Update File: path/to/file\n@@ optional line"
    " above the change\n context line\n-removed line\n+added line\n*** End Patch"
)


class PatchError(Exception):
    """A patch that cannot be parsed or applied. The text is written for the model."""

    def __init__(self, message: str, *, line: int | None = None, path: str | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.path = path

    def __str__(self) -> str:
        if self.line is None:
            return self.message
        return f"Invalid patch at line {self.line}: {self.message}"


@dataclass(frozen=True)
class UpdateChunk:
    """One ``@@`` section: ``old_lines`` (context and '-') become ``new_lines`` (context, '+')."""

    context: str | None
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    # (index in old_lines, index in new_lines) of each context line, kept as the file has it.
    context_pairs: tuple[tuple[int, int], ...] = ()
    end_of_file: bool = False
    line: int = 0


@dataclass(frozen=True)
class AddFile:
    path: str
    contents: str
    line: int = 0


@dataclass(frozen=True)
class DeleteFile:
    path: str
    line: int = 0


@dataclass(frozen=True)
class UpdateFile:
    path: str
    move_to: str | None
    chunks: tuple[UpdateChunk, ...]
    line: int = 0


Hunk = AddFile | DeleteFile | UpdateFile


@dataclass(frozen=True)
class Patch:
    hunks: tuple[Hunk, ...] = field(default_factory=tuple)


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


@dataclass(frozen=True)
class _Line:
    number: int
    text: str


# ---------------------------------------------------------------------------------------------
# Parsing


def parse_patch(text: str) -> Patch:
    """Parse patch text, leniently about whitespace around markers and a heredoc wrapper."""
    body = _patch_body(text)
    hunks: list[Hunk] = []
    index = 0
    while index < len(body):
        hunk, index = _parse_hunk(body, index)
        hunks.append(hunk)
    if not hunks:
        raise PatchError(
            "The patch contains no file operations. Put '*** Add File: <path>',"
            " '*** Update File: <path>' or '*** Delete File: <path>' sections between"
            f" '{BEGIN_PATCH}' and '{END_PATCH}'.\n{_SYNTAX_HELP}"
        )
    return Patch(tuple(hunks))


def _patch_body(text: str) -> list[_Line]:
    stripped = text.strip(_WHITESPACE)
    leading = text[: len(text) - len(text.lstrip(_WHITESPACE))]
    first_number = leading.count("\n") + 1
    lines = [
        _Line(first_number + offset, piece[:-1] if piece.endswith("\r") else piece)
        for offset, piece in enumerate(stripped.split("\n"))
    ]
    try:
        return _inside_markers(lines)
    except PatchError as plain_error:
        first, last = lines[0].text, lines[-1].text
        if len(lines) >= 4 and first in _HEREDOC_OPENERS and last.endswith("EOF"):
            return _inside_markers(lines[1:-1])
        raise plain_error from None


def _inside_markers(lines: list[_Line]) -> list[_Line]:
    first, last = lines[0], lines[-1]
    if first.text.strip(_WHITESPACE) != BEGIN_PATCH:
        raise PatchError(
            f"the first line of the patch must be '{BEGIN_PATCH}', not '{_clip(first.text)}'."
            f"\n{_SYNTAX_HELP}",
            line=first.number,
        )
    if len(lines) < 2 or last.text.strip(_WHITESPACE) != END_PATCH:
        raise PatchError(
            f"the last line of the patch must be '{END_PATCH}', not '{_clip(last.text)}'."
            " Send the whole patch again, ending with that line.",
            line=last.number,
        )
    return lines[1:-1]


def _parse_hunk(body: list[_Line], index: int) -> tuple[Hunk, int]:
    header = body[index]
    marker = header.text.strip(_WHITESPACE)
    if marker.startswith(ADD_FILE):
        path = marker[len(ADD_FILE) :]
        added: list[str] = []
        index += 1
        while index < len(body) and body[index].text.startswith("+"):
            added.append(body[index].text[1:] + "\n")
            index += 1
        return AddFile(path, "".join(added), header.number), index
    if marker.startswith(DELETE_FILE):
        return DeleteFile(marker[len(DELETE_FILE) :], header.number), index + 1
    if marker.startswith(UPDATE_FILE):
        return _parse_update(body, index, marker[len(UPDATE_FILE) :])
    raise PatchError(
        f"'{_clip(marker)}' is not a valid file header. Valid headers are '{ADD_FILE}<path>',"
        f" '{DELETE_FILE}<path>' and '{UPDATE_FILE}<path>'; the lines of an added file start"
        " with '+'.",
        line=header.number,
    )


def _parse_update(body: list[_Line], index: int, path: str) -> tuple[UpdateFile, int]:
    header = body[index]
    index += 1
    move_to = None
    if index < len(body) and body[index].text.startswith(MOVE_TO):
        move_to = body[index].text[len(MOVE_TO) :]
        index += 1
    chunks: list[UpdateChunk] = []
    while index < len(body):
        text = body[index].text
        if not text.strip(_WHITESPACE):
            # Blank lines may separate sections.
            index += 1
            continue
        if text.startswith("*"):
            break
        chunk, index = _parse_chunk(body, index, allow_missing_header=not chunks)
        chunks.append(chunk)
    if not chunks:
        raise PatchError(
            f"'{UPDATE_FILE}{path}' has no changes. Follow it with a '@@' section of context"
            " (' '), removed ('-') and added ('+') lines.",
            line=header.number,
            path=path,
        )
    return UpdateFile(path, move_to, tuple(chunks), header.number), index


def _parse_chunk(
    body: list[_Line], index: int, *, allow_missing_header: bool
) -> tuple[UpdateChunk, int]:
    start = body[index]
    context: str | None = None
    if start.text == "@@":
        index += 1
    elif start.text.startswith("@@ "):
        context = start.text[3:]
        index += 1
    elif not allow_missing_header:
        raise PatchError(
            f"expected a '@@' line to start the next section, got '{_clip(start.text)}'. Every"
            " line of a change starts with ' ' (context), '-' (removed) or '+' (added).",
            line=start.number,
        )
    if index >= len(body):
        raise PatchError(
            "this '@@' section has no lines. Add context (' '), removed ('-') or added ('+')"
            " lines after it.",
            line=start.number,
        )
    old: list[str] = []
    new: list[str] = []
    pairs: list[tuple[int, int]] = []
    end_of_file = False
    parsed = 0
    while index < len(body):
        line = body[index]
        text = line.text
        if text == END_OF_FILE:
            if parsed == 0:
                raise PatchError(
                    f"this '@@' section has no lines before '{END_OF_FILE}'.",
                    line=line.number,
                )
            end_of_file = True
            index += 1
            break
        if text == "" or text[0] == " ":
            pairs.append((len(old), len(new)))
            old.append(text[1:])
            new.append(text[1:])
        elif text[0] == "+":
            new.append(text[1:])
        elif text[0] == "-":
            old.append(text[1:])
        elif parsed == 0:
            raise PatchError(
                f"unexpected line '{_clip(text)}' in a change section. Every line should start"
                " with ' ' (context line), '+' (added line) or '-' (removed line).",
                line=line.number,
            )
        else:
            # The next section (or file header) starts here.
            break
        parsed += 1
        index += 1
    chunk = UpdateChunk(context, tuple(old), tuple(new), tuple(pairs), end_of_file, start.number)
    return chunk, index


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


# ---------------------------------------------------------------------------------------------
# Planning


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
    return line.rstrip(_WHITESPACE)


def _trim(line: str) -> str:
    return line.strip(_WHITESPACE)


def _codex_normalize(line: str) -> str:
    return line.strip(_WHITESPACE).translate(_CODEX_PUNCTUATION)


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
        what = f"its context line '@@ {_clip(pattern[0])}' was not found"
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
