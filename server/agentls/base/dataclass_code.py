"""The compiled methods of dataclasses, kept across processes so start-up does not compile
them again.

``@dataclass`` writes each class's methods (``__init__``, ``__repr__``, ``__eq__``; for a
frozen class also ``__setattr__``, ``__delattr__``, ``__hash__``) as source text and turns the
text into code with ``exec``: ~850 compilations before `agentls run` sends its first model
request (ours and the libraries'), ~380 M instructions, the largest single part of
AgentLS's own start-up (issue 27). A given text compiles to the same code object in every
process of one Python build, so the code is kept in the user cache directory (one file per
build, ``marshal`` format) and ``dataclasses`` is handed the stored code for a text it has
compiled before.

Nothing else changes: the stored code is what ``exec`` compiles from that text (file name
``<string>``, no inherited compiler flags), run with the same namespaces. A missing,
unreadable or foreign file is not used; texts compiled for the first time are added when
the process exits. The file holds one section per module that made the classes, decoded
when that module makes its first one (`agentls config get` decodes a handful, not the
engine's). Installed by ``import_gc.imports_without_gc`` (the commands' and the server's
heavy imports).
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import marshal
import os
import sys
import threading
from pathlib import Path
from types import CodeType
from typing import Any

# The file is read only by the very build that wrote it: marshal's format and the bytecode
# differ between Python versions.
HEADER = f"agentls dataclass code 2|{sys.version}|{importlib.util.MAGIC_NUMBER.hex()}"
MAX_ENTRIES = 6_000  # ~1 KB each; past it, only what this process used is kept

Table = dict[str, CodeType]  # source text -> its code

_lock = threading.Lock()
_sections: dict[str, bytes] = {}  # module -> its Table, still marshalled
_codes: dict[str, Table] = {}  # module -> its Table, decoded on its first dataclass
_new: set[tuple[str, str]] = set()  # (module, text) compiled in this process
_used: set[tuple[str, str]] = set()
_file: Path | None = None


def cache_file() -> Path:
    import platformdirs

    return (platformdirs.user_cache_path("agentls") / "code"
            / f"dataclasses-{sys.implementation.cache_tag}.marshal")


def install(path: Path | None = None) -> None:
    """Hand ``dataclasses`` the stored code from now on (once per process)."""
    global _file
    with _lock:
        if _file is not None:
            return
        _file = path or cache_file()
        _sections.update(read_sections(_file))
        # ``dataclasses`` looks ``exec`` up in its own globals before the builtins.
        dataclasses.exec = _exec  # type: ignore[attr-defined]
        atexit.register(save)


def read_sections(path: Path) -> dict[str, bytes]:
    """The file's sections by module; empty when it is missing or not this build's."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    try:
        header, sections = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return {}  # not a file this module wrote whole: compiled again, then replaced
    if header != HEADER or not isinstance(sections, dict):
        return {}
    return {module: section for module, section in sections.items()
            if isinstance(module, str) and isinstance(section, bytes)}


def decode(section: bytes) -> Table:
    """One section's code by source text (empty if it is damaged)."""
    try:
        table = marshal.loads(section)
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {text: code for text, code in table.items()
            if isinstance(text, str) and isinstance(code, CodeType)}


def load(path: Path) -> Table:
    """Every section's code by source text (for tests and inspection)."""
    table: Table = {}
    for section in read_sections(path).values():
        table.update(decode(section))
    return table


def _table(module: str) -> Table:
    table = _codes.get(module)
    if table is None:
        table = _codes[module] = decode(_sections.get(module, b""))
    return table


def _exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    if globals is None:  # exec's default: the caller's namespaces, not this module's
        frame = sys._getframe(1)
        globals = frame.f_globals
        if locals is None:
            locals = frame.f_locals
    if type(source) is str:
        module = globals.get("__name__") if isinstance(globals, dict) else None
        module = module if isinstance(module, str) else ""
        table = _table(module)
        code = table.get(source)
        if code is None:
            # What exec(source) compiles: the name "<string>", not this module's flags.
            code = compile(source, "<string>", "exec", dont_inherit=True)
            table[source] = code
            _new.add((module, source))
        _used.add((module, source))
        source = code
    exec(source, globals, locals)


def save() -> None:
    """Add the texts compiled for the first time to the file (atomically; at exit)."""
    with _lock:
        if _file is None or not _new:
            return
        # Copied first (one C call each): a daemon thread may still be making dataclasses.
        new, used = list(_new), list(_used)
        path = _file
        sections = read_sections(path)
        changed: dict[str, Table] = {}
        for module, text in new:
            if module not in changed:
                changed[module] = decode(sections.get(module, b""))
            changed[module][text] = _codes[module][text]
        for module, table in changed.items():
            sections[module] = marshal.dumps(table)
        if sum(len(decode(s)) for s in sections.values()) > MAX_ENTRIES:
            kept: dict[str, Table] = {}
            for module, text in used:
                kept.setdefault(module, {})[text] = _codes[module][text]
            sections = {module: marshal.dumps(table) for module, table in kept.items()}
        _new.difference_update(new)
    _write(path, marshal.dumps((HEADER, sections)))


def _write(path: Path, data: bytes) -> None:
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:  # a cache: the next process compiles again, nothing is lost
        import logging

        logging.getLogger(__name__).debug("dataclass code not stored in %s: %s", path, exc)
