"""The vector cache's matrix saved beside the index (``.agentls/vectors.bin``), so a new
process (a cold ``agentls search``) reads it in one go instead of rebuilding it from
SQLite's rows (0.6 s of CPU at 120,000 chunks, most of a cold search).

The file is a copy, never the truth: it carries the stamp of the store it was made from
(``db.stamp``: the store's id, its count of writes, the embedder) and is read only while
the store still has that stamp; any write to the index makes it stale, and the next load
from SQLite writes it again. Written whole or not at all (a temporary file renamed over
it). Layout: one line of JSON (stamp, rows, width), the chunk ids (int64), the vectors
(int8, rows × width).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

NAME = "vectors.bin"


def path_beside(index_path: Path) -> Path:
    return index_path.with_name(NAME)


def save(path: Path, stamp: str, ids: np.ndarray, matrix: np.ndarray) -> None:
    """Write ``ids`` and ``matrix`` (int8 rows) with ``stamp``; a failure leaves no file
    behind and is logged (the next load reads SQLite again, as without a copy)."""
    import numpy as np

    header = json.dumps({"stamp": stamp, "rows": len(ids), "width": matrix.shape[1]})
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as out:
            out.write(header.encode() + b"\n")
            out.write(np.ascontiguousarray(ids, dtype=np.int64).tobytes())
            out.write(np.ascontiguousarray(matrix, dtype=np.int8).tobytes())
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("search index: cannot save the vectors' copy %s (%s); the next search "
                    "reads them from the index again", path, exc)
        tmp.unlink(missing_ok=True)


def load(path: Path, stamp: str, capacity: Callable[[int], int]
         ) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(ids, matrix, rows) from ``path`` if it was made from the store as it is now
    (``stamp``), in arrays of at least ``capacity(rows)`` rows (spare rows zero, ids -1);
    None when there is no such copy."""
    import numpy as np

    try:
        with open(path, "rb") as f:
            header = json.loads(f.readline())
            if header.get("stamp") != stamp:
                return None
            rows, width = int(header["rows"]), int(header["width"])
            size = max(capacity(rows), rows)
            ids = np.full(size, -1, dtype=np.int64)
            matrix = np.zeros((size, width), dtype=np.int8)
            if f.readinto(ids[:rows].data.cast("B")) != rows * 8 or \
                    f.readinto(matrix[:rows].data.cast("B")) != rows * width:
                return None  # cut short: not the file save() wrote
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("search index: the vectors' copy %s is unreadable (%s); reading them "
                    "from the index", path, exc)
        return None
    return ids, matrix, rows
