"""Tables for people (`config list`, `backends`, `sessions`): rich tables that fit the terminal.

On a terminal, or wherever ``COLUMNS`` is set, a table wraps or shortens its cells to the
width; piped without ``COLUMNS``, rows stay whole (one line each) for grep and logs. Every
table command also has ``--json`` for programs.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

WIDE = 512  # piped output without COLUMNS: wide enough that no row is wrapped


def table_console() -> Console:
    from rich.console import Console

    if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit():
        return Console(highlight=False)  # rich reads the terminal's width, or COLUMNS
    return Console(width=WIDE, highlight=False)


def new_table() -> Table:
    from rich import box
    from rich.table import Table

    # SIMPLE_HEAD: a rule under the header only; no side borders spending the width.
    return Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False, show_edge=False)
