"""Search/replace matching behind ``edit_file``: exact first, then progressively looser layers.

Pure string work: the tool layer reads the text (through the workspace overlay) and puts the
result into the ChangeSet. Every layer must find exactly one place; the first layer that finds
anything decides, because each later layer accepts everything an earlier one does.

The folds and indentation shifts the looser layers allow live in ``match_folds.py``; the
"closest text" shown when nothing matches, in ``closest_window.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Literal

from agentls.tools.edit.closest_window import (
    ClosestWindow,
    closest_window,
    format_closest,
)
from agentls.tools.edit.match_blank_lines import find_ignoring_blank_lines, replacement_lines
from agentls.tools.edit.match_folds import (
    Delta,
    fold_punctuation,
    indent_delta,
    reindent,
    retab,
    tab_delta,
)

MatchLayer = Literal["exact", "trailing_whitespace", "indentation", "tabs_spaces",
                     "unicode_punctuation", "blank_lines"]
MatchErrorCode = Literal["NO_MATCH", "AMBIGUOUS", "EMPTY_SEARCH"]


_LAYER_WORDING: dict[MatchLayer, str] = {
    "exact": "exactly",
    "trailing_whitespace": "when trailing whitespace is ignored",
    "indentation": "when indentation is ignored",
    "tabs_spaces": "when tabs and spaces in indentation are treated alike",
    "unicode_punctuation": "when indentation and Unicode punctuation are ignored",
    "blank_lines": "when blank lines are ignored",
}
_MAX_LISTED_MATCHES = 10


@dataclass(frozen=True)
class AppliedEdit:
    """Where one edit landed: 1-based lines of the replaced text, before the edit was made."""

    layer: MatchLayer
    start_line: int
    end_line: int


@dataclass(frozen=True)
class EditOutcome:
    text: str
    edits: tuple[AppliedEdit, ...]

    @property
    def layers(self) -> tuple[MatchLayer, ...]:
        return tuple(edit.layer for edit in self.edits)


class MatchError(Exception):
    """An edit that could not be placed. ``message`` is written for the model."""

    def __init__(
        self,
        code: MatchErrorCode,
        message: str,
        *,
        edit_index: int,
        lines: tuple[int, ...] = (),
        closest: ClosestWindow | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.edit_index = edit_index
        self.lines = lines
        self.closest = closest


def apply_edits(text: str, edits: Sequence[tuple[str, str]]) -> EditOutcome:
    """Apply ``(search, replace)`` pairs in order; all of them or, on the first error, none."""
    current = text
    applied: list[AppliedEdit] = []
    for index, (search, replace) in enumerate(edits):
        where = _edit_label(index, len(edits))
        if search == "":
            raise MatchError(
                "EMPTY_SEARCH",
                f"{where}: `search` is empty, so there is nothing to find. Put the exact lines to"
                " change in `search` (to insert, include a neighbouring line in `search` and"
                f" repeat it in `replace`).{_none_applied(len(edits))}",
                edit_index=index,
            )
        match = _locate(current, search, replace, where, index, len(edits))
        region = current[match.start : match.end]
        start_line = current.count("\n", 0, match.start) + 1
        end_line = start_line + region.count("\n") - (1 if region.endswith("\n") else 0)
        applied.append(AppliedEdit(match.layer, start_line, max(start_line, end_line)))
        current = current[: match.start] + match.replacement + current[match.end :]
    return EditOutcome(current, tuple(applied))


@dataclass(frozen=True)
class _Match:
    start: int
    end: int
    replacement: str
    layer: MatchLayer


class _SplitText:
    """The text as lines (without their endings) and where each line starts."""

    def __init__(self, text: str) -> None:
        self.text = text
        pieces = text.split("\n")
        self.pieces = pieces
        # A final newline ends the last line; it does not start an empty one.
        count = len(pieces) - 1 if pieces[-1] == "" else len(pieces)
        self.contents = [
            piece[:-1] if index < len(pieces) - 1 and piece.endswith("\r") else piece
            for index, piece in enumerate(pieces[:count])
        ]
        self.starts = [0, *accumulate(len(piece) + 1 for piece in pieces[: count - 1])]

    def has_newline(self, index: int) -> bool:
        return index < len(self.pieces) - 1

    def line_end(self, index: int) -> int:
        """Offset just after the line's ending (or the end of the text)."""
        if self.has_newline(index):
            return self.starts[index] + len(self.pieces[index]) + 1
        return len(self.text)

    def content_end(self, index: int) -> int:
        return self.starts[index] + len(self.contents[index])

    def ending(self, index: int) -> str | None:
        if not self.has_newline(index):
            return None
        return "\r\n" if self.pieces[index].endswith("\r") else "\n"


def _locate(text: str, search: str, replace: str, where: str, index: int, total: int) -> _Match:
    file_eol = _dominant_eol(text)
    exact = _find_substring(text, search, replace, file_eol, where, index, total)
    if exact is not None:
        return exact

    split = _SplitText(text)
    normalized = search.replace("\r\n", "\n")
    trailing_newline = normalized.endswith("\n")
    search_lines = (normalized[:-1] if trailing_newline else normalized).split("\n")

    for layer in _line_layers(text, search):
        starts, delta = _find_lines(split, search_lines, layer)
        if len(starts) > 1:
            size = len(search_lines)
            raise _ambiguous(where, index, total, layer, [(s + 1, s + size) for s in starts])
        if starts:
            return _line_match(
                split, starts[0], search_lines, replace, trailing_newline, delta, layer, file_eol
            )

    blank = _blank_lines_match(split, search_lines, replace, trailing_newline, file_eol,
                               (where, index, total))
    if blank is not None:
        return blank

    closest = closest_window(split.contents, search_lines)
    parts = [
        f"{where}: `search` was not found in the file (also tried ignoring trailing whitespace,"
        " indentation, tabs against spaces, Unicode punctuation and blank lines)."
    ]
    if closest is not None:
        parts.append(format_closest(closest))
        if closest.similarity == 1.0:
            parts.append(
                "Those lines differ from `search` only in whitespace that no layer forgives:"
                " indentation that changes within the block."
            )
    already = _replacement_line(text, replace, file_eol)
    if already is not None:
        parts.append(
            f"Note: the replacement text is already in the file at line {already}: the edit may"
            " already be applied. Re-read the file before editing again."
        )
    parts.append(
        "Copy the lines exactly as the file has them (read_file shows the current text) into"
        f" `search` and try again.{_none_applied(total)}"
    )
    raise MatchError("NO_MATCH", "\n".join(parts), edit_index=index, closest=closest)


def _find_substring(
    text: str, search: str, replace: str, file_eol: str, where: str, index: int, total: int
) -> _Match | None:
    variants = [search]
    adapted = _to_eol(search, file_eol)
    if adapted != search:
        variants.append(adapted)
    for variant in variants:
        start = text.find(variant)
        if start < 0:
            continue
        if text.find(variant, start + 1) >= 0:
            spans: list[tuple[int, int]] = []
            position = start
            while position >= 0 and len(spans) <= _MAX_LISTED_MATCHES:
                first = text.count("\n", 0, position) + 1
                spans.append((first, first + variant.rstrip("\n").count("\n")))
                position = text.find(variant, position + 1)
            raise _ambiguous(where, index, total, "exact", spans)
        end = start + len(variant)
        eol = _region_eol(text[start:end], file_eol)
        return _Match(start, end, _to_eol(replace, eol), "exact")
    return None


def _line_layers(text: str, search: str) -> list[MatchLayer]:
    layers: list[MatchLayer] = []
    if "\r" in text:
        # Line by line, so a block also matches where the file mixes CRLF and LF endings.
        layers.append("exact")
    layers += ["trailing_whitespace", "indentation"]
    if "\t" in text or "\t" in search:
        layers.append("tabs_spaces")
    if not (text.isascii() and search.isascii()):
        layers.append("unicode_punctuation")
    return layers


def _keys(lines: Sequence[str], layer: MatchLayer) -> list[str]:
    if layer == "exact":
        return list(lines)
    if layer == "trailing_whitespace":
        return [line.rstrip() for line in lines]
    if layer in ("indentation", "tabs_spaces"):
        return [line.strip() for line in lines]
    # Fold the whole block at once: no fold adds or removes a newline.
    return [line.strip() for line in fold_punctuation("\n".join(lines)).split("\n")]


def _find_lines(
    split: _SplitText, search_lines: list[str], layer: MatchLayer
) -> tuple[list[int], Delta]:
    """Starts of every window matching at ``layer``, and the indentation delta of the first."""
    size = len(search_lines)
    last_start = len(split.contents) - size
    if last_start < 0:
        return [], ("", "", 0)
    file_keys = _keys(split.contents, layer)
    search_keys = _keys(search_lines, layer)
    anchor = next((k for k, key in enumerate(search_keys) if key), 0)
    anchor_key = search_keys[anchor]
    tolerant = layer in ("indentation", "tabs_spaces", "unicode_punctuation")
    fold = layer == "unicode_punctuation"
    starts: list[int] = []
    first_delta: Delta = ("", "", 0)
    for position, key in enumerate(file_keys):
        if key != anchor_key:
            continue
        start = position - anchor
        if start < 0 or start > last_start or file_keys[start : start + size] != search_keys:
            continue
        if tolerant:
            block = split.contents[start : start + size]
            delta = (tab_delta(block, search_lines) if layer == "tabs_spaces"
                     else indent_delta(block, search_lines, fold))
            if delta is None:
                continue
            if not starts:
                first_delta = delta
        starts.append(start)
        if len(starts) > _MAX_LISTED_MATCHES:
            break
    return starts, first_delta


def _line_match(
    split: _SplitText,
    start: int,
    search_lines: list[str],
    replace: str,
    trailing_newline: bool,
    delta: Delta,
    layer: MatchLayer,
    file_eol: str,
) -> _Match:
    last = start + len(search_lines) - 1
    replacement = replace.replace("\r\n", "\n")
    if layer == "tabs_spaces":
        replacement = retab(replacement, delta, split.contents[start : last + 1])
    elif layer in ("indentation", "unicode_punctuation"):
        replacement = reindent(replacement, delta[0], delta[1])
    if not trailing_newline:
        end = split.content_end(last)
    elif split.has_newline(last):
        end = split.line_end(last)
    else:
        # The block ends the file, which has no final newline: keep it that way.
        end = len(split.text)
        if replacement.endswith("\n"):
            replacement = replacement[:-1]
    eol = split.ending(start) or file_eol
    return _Match(split.starts[start], end, _to_eol(replacement, eol), layer)


def _blank_lines_match(
    split: _SplitText,
    search_lines: list[str],
    replace: str,
    trailing_newline: bool,
    file_eol: str,
    label: tuple[str, int, int],
) -> _Match | None:
    """The last layer: blank lines ignored (``match_blank_lines.py``), still exactly one place."""
    found = find_ignoring_blank_lines(split.contents, search_lines)
    if len(found) > 1:
        raise _ambiguous(*label, "blank_lines", [(m.first + 1, m.last + 1) for m in found])
    if not found:
        return None
    match = found[0]
    body = replace.replace("\r\n", "\n")
    ends_line = trailing_newline and body.endswith("\n")
    if ends_line:
        body = body[:-1]
    lines = replacement_lines(split.contents, search_lines,
                              body.split("\n") if body or not ends_line else [], match)
    replacement = "\n".join(lines) + ("\n" if ends_line and lines else "")
    if not trailing_newline:
        end = split.content_end(match.last)
    elif split.has_newline(match.last):
        end = split.line_end(match.last)
    else:
        end = len(split.text)  # the block ends the file, which has no final newline
        replacement = replacement.removesuffix("\n")
    eol = split.ending(match.first) or file_eol
    return _Match(split.starts[match.first], end, _to_eol(replacement, eol), "blank_lines")


def _ambiguous(
    where: str,
    index: int,
    total: int,
    layer: MatchLayer,
    spans: Sequence[tuple[int, int]],
) -> MatchError:
    listed = spans[:_MAX_LISTED_MATCHES]
    places = ", ".join(f"line {a}" if a == b else f"lines {a}-{b}" for a, b in listed)
    more = " and more" if len(spans) > _MAX_LISTED_MATCHES else ""
    count = f"{len(spans)}" if not more else f"more than {_MAX_LISTED_MATCHES}"
    return MatchError(
        "AMBIGUOUS",
        f"{where}: `search` matches {count} places {_LAYER_WORDING[layer]} ({places}{more}),"
        " but it must match exactly one. Add surrounding lines to `search` (and the same lines"
        f" to `replace`) so that it is unique.{_none_applied(total)}",
        edit_index=index,
        lines=tuple(a for a, _ in listed),
    )


def _replacement_line(text: str, replace: str, file_eol: str) -> int | None:
    if not replace.strip():
        return None
    for candidate in (replace, _to_eol(replace, file_eol)):
        position = text.find(candidate)
        if position >= 0:
            return text.count("\n", 0, position) + 1
    return None


def _dominant_eol(text: str) -> str:
    if "\r" not in text:  # one quick scan where counting both would be two slow ones
        return "\n"
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def _region_eol(region: str, file_eol: str) -> str:
    if "\r\n" in region:
        return "\r\n"
    if "\n" in region:
        return "\n"
    return file_eol


def _to_eol(text: str, eol: str) -> str:
    text = text.replace("\r\n", "\n")
    return text if eol == "\n" else text.replace("\n", eol)


def _edit_label(index: int, total: int) -> str:
    return "The edit" if total == 1 else f"Edit {index + 1} of {total}"


def _none_applied(total: int) -> str:
    if total == 1:
        return ""
    return f" None of the {total} edits were applied; send them all again."
