"""The "apply_patch" (V4A) format of OpenAI Codex: parse a patch, then plan the file changes.

A port of the behaviour of codex-rs/apply-patch (parser.rs, seek_sequence.rs and the update
logic of lib.rs / text_file.rs), with one deliberate difference: planning is all-or-nothing.
Nothing here touches the disk; ``patch_plan.plan_patch`` reads through a callable and returns
the new texts, so the tool layer can read through the workspace overlay and write into a
ChangeSet. This module holds the format and its parser.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
ADD_FILE = "*** Add File: "
DELETE_FILE = "*** Delete File: "
UPDATE_FILE = "*** Update File: "
MOVE_TO = "*** Move to: "
END_OF_FILE = "*** End of File"
_HEREDOC_OPENERS = ("<<EOF", "<<'EOF'", '<<"EOF"')

# What Rust's str::trim() removes (Unicode White_Space), so markers are trimmed the same way.
WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(chr(code) for code in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)
# seek_sequence's last pass: the punctuation it folds to ASCII, exactly that set.
CODEX_PUNCTUATION = str.maketrans(
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
    stripped = text.strip(WHITESPACE)
    leading = text[: len(text) - len(text.lstrip(WHITESPACE))]
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
    if first.text.strip(WHITESPACE) != BEGIN_PATCH:
        raise PatchError(
            f"the first line of the patch must be '{BEGIN_PATCH}', not '{clip(first.text)}'."
            f"\n{_SYNTAX_HELP}",
            line=first.number,
        )
    if len(lines) < 2 or last.text.strip(WHITESPACE) != END_PATCH:
        raise PatchError(
            f"the last line of the patch must be '{END_PATCH}', not '{clip(last.text)}'."
            " Send the whole patch again, ending with that line.",
            line=last.number,
        )
    return lines[1:-1]


def _parse_hunk(body: list[_Line], index: int) -> tuple[Hunk, int]:
    header = body[index]
    marker = header.text.strip(WHITESPACE)
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
        f"'{clip(marker)}' is not a valid file header. Valid headers are '{ADD_FILE}<path>',"
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
        if not text.strip(WHITESPACE):
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
            f"expected a '@@' line to start the next section, got '{clip(start.text)}'. Every"
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
                f"unexpected line '{clip(text)}' in a change section. Every line should start"
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


def clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


