"""One atomic write of a state file (base layer: no AgentLS imports, usable from every layer).

Readers see the old file or the whole new one, never half of one: the text goes to a
temporary file of its own in the same folder (``mkstemp``: two writers at once never share
one), then ``os.replace`` puts it in place; on failure the temporary file is removed and the
``OSError`` is raised for the caller to word. ``durable`` also fsyncs before the replace
(settings, records, artifacts); caches that are rebuilt when lost skip it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_text(path: Path, text: str, *, durable: bool = True, parents: bool = False) -> None:
    """Write ``text`` to ``path`` atomically (``parents``: create missing folders)."""
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json(path: Path, data: Any, *, durable: bool = True, parents: bool = False,
               **dumps: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically; ``dumps``: ``json.dumps`` options."""
    write_text(path, json.dumps(data, **dumps), durable=durable, parents=parents)
