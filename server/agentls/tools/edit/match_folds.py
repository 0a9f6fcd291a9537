"""How a search block may differ from the file and still match it: typographic punctuation
folded to ASCII, and indentation shifted uniformly (spaces, or tabs against spaces at a tab
width that lines the blocks up). Used by the matching layers of ``matching.py``."""

from __future__ import annotations

from collections.abc import Sequence

# Typographic punctuation a model tends to type as ASCII (or the other way round).
_PUNCTUATION_FOLDS = {
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
    **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
    **dict.fromkeys(
        "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "
    ),
    "\u2026": "...",
}


_TAB_WIDTHS = (4, 8, 2)  # tried in this order: the first width that lines the block up wins


Delta = tuple[str, str, int]  # (search base, file base, tab width; 0: leads compared as text)


def fold_punctuation(text: str) -> str:
    """Curly quotes, dashes, odd spaces and the ellipsis replaced by their ASCII forms."""
    if text.isascii():
        return text
    # A few C-speed replaces beat str.translate's per-character dictionary lookups.
    for char, ascii_form in _PUNCTUATION_FOLDS.items():
        if char in text:
            text = text.replace(char, ascii_form)
    return text


def tab_delta(file_block: Sequence[str], search_block: Sequence[str]) -> Delta | None:
    """Like ``indent_delta`` with tabs expanded to a width that lines the blocks up: for a
    file indented with tabs and a search indented with spaces (or the reverse)."""
    pairs = [(_lead(f), _lead(s)) for f, s in zip(file_block, search_block, strict=True)
             if f.strip()]
    for width in _TAB_WIDTHS:
        file_cols = [len(f.expandtabs(width)) for f, _ in pairs]
        search_cols = [len(s.expandtabs(width)) for _, s in pairs]
        if not file_cols:
            return "", "", width
        shift = file_cols[0] - search_cols[0]
        if all(f - s == shift for f, s in zip(file_cols, search_cols, strict=True)):
            file_base = pairs[file_cols.index(min(file_cols))][0]
            search_base = pairs[search_cols.index(min(search_cols))][1]
            return search_base, file_base, width
    return None


def retab(text: str, delta: Delta, file_block: Sequence[str]) -> str:
    """``text`` re-indented into the file's columns and its indentation character."""
    search_base, file_base, width = delta
    shift = len(file_base.expandtabs(width)) - len(search_base.expandtabs(width))
    tabs = any(_lead(line).startswith("\t") for line in file_block)
    lines = []
    for line in text.split("\n"):
        if not line.strip():
            lines.append(line)
            continue
        columns = max(0, len(_lead(line).expandtabs(width)) + shift)
        lead = "\t" * (columns // width) + " " * (columns % width) if tabs else " " * columns
        lines.append(lead + line.lstrip())
    return "\n".join(lines)


def indent_delta(
    file_block: Sequence[str], search_block: Sequence[str], fold: bool
) -> Delta | None:
    """``(search_base, file_base)`` if the blocks differ only by a uniform indentation."""
    file_leads: list[str] = []
    search_leads: list[str] = []
    for file_line, search_line in zip(file_block, search_block, strict=True):
        if file_line.strip():
            file_leads.append(_lead(file_line))
            search_leads.append(_lead(search_line))
    file_base = _common_prefix(file_leads)
    search_base = _common_prefix(search_leads)
    for file_lead, search_lead in zip(file_leads, search_leads, strict=True):
        file_rest = file_lead[len(file_base) :]
        search_rest = search_lead[len(search_base) :]
        if fold:
            file_rest, search_rest = fold_punctuation(file_rest), fold_punctuation(search_rest)
        if file_rest != search_rest:
            return None
    return search_base, file_base, 0


def _common_prefix(texts: Sequence[str]) -> str:
    if not texts:
        return ""
    # The lexicographically smallest and largest strings bound what all of them share.
    low, high = min(texts), max(texts)
    size = 0
    while size < len(low) and low[size] == high[size]:
        size += 1
    return low[:size]


def _lead(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def reindent(text: str, search_base: str, file_base: str) -> str:
    if search_base == file_base:
        return text
    lines = []
    for line in text.split("\n"):
        if not line.strip():
            lines.append(line)
        elif line.startswith(search_base):
            lines.append(file_base + line[len(search_base) :])
        elif file_base.startswith(search_base):
            lines.append(file_base[len(search_base) :] + line)
        elif search_base.startswith(file_base):
            removable = min(len(search_base) - len(file_base), len(_lead(line)))
            lines.append(line[removable:])
        else:
            lines.append(line)
    return "\n".join(lines)
