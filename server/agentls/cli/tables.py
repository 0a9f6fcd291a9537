"""Tables for people (`config list`, `backends`, `sessions`, `mcp`), plain rows for programs.

On a terminal a table is drawn by rich to the terminal's width (or ``COLUMNS``), wrapping or
shortening its cells. When standard output is not a terminal (a pipe, a file, a program's
capture), every table command prints one plain line per row instead: the cells joined by
tabs, no header, no padding, no wrapping (as ``git config --list`` does), so ``grep``,
``cut -f`` and ``awk -F'\\t'`` read it. ``--json`` is the same in both cases.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def for_people(stream: TextIO | None = None) -> bool:
    """Whether standard output is a terminal (a drawn table) rather than a program (rows)."""
    out = stream if stream is not None else sys.stdout
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def plain_cell(value: object) -> str:
    """One cell on one line: tabs, newlines and carriage returns written as ``\\t``, ``\\n``,
    ``\\r`` (and a backslash as ``\\\\``) so a row stays one line with a fixed number of
    fields."""
    text = "" if value is None else str(value)
    return (text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
            .replace("\r", "\\r"))


def print_rows(rows: Iterable[Iterable[object]], stream: TextIO | None = None) -> None:
    """One line per row, cells separated by a tab."""
    out = stream if stream is not None else sys.stdout
    for row in rows:
        out.write("\t".join(plain_cell(cell) for cell in row) + "\n")
    out.flush()


def table_console() -> Console:
    from rich.console import Console

    return Console(highlight=False)  # rich reads the terminal's width, or COLUMNS


def new_table() -> Table:
    from rich import box
    from rich.table import Table

    # SIMPLE_HEAD: a rule under the header only; no side borders spending the width.
    return Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False, show_edge=False)
