"""A file's text in the prompt: read capped from the person's disk, cut at a line end, put in
a Markdown code block with its language, made sendable; and what a level already holds.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class IncludedFile:
    """A file whose whole text an earlier level holds (what later levels need not repeat)."""

    path: str  # as the model sees it
    abs: Path  # real path
    text: str
    where: str  # "the workspace instructions" or "the project facts"


@dataclass(frozen=True)
class CappedRead:
    real: Path
    data: bytes  # at most the limit asked for
    size: int  # the whole file's size


def read_inside(root: Path, path: Path, limit: int) -> CappedRead | None:
    """The first ``limit`` bytes of a regular file whose real path lies inside ``root``."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    try:
        if os.path.commonpath([real_root, real]) != real_root:
            return None
    except ValueError:  # different drives
        return None
    try:
        # O_NONBLOCK: a FIFO swapped in after realpath must not hang the session's start.
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit)
    except OSError:
        return None
    finally:
        os.close(fd)
    return CappedRead(Path(real), data, max(info.st_size, len(data)))


def cut_bytes(data: bytes, size: int | None, cap: int) -> tuple[str, bool]:
    """UTF-8 text of at most ``cap`` bytes, cut at a line end when one is near; (text, cut)."""
    whole = size if size is not None else len(data)
    if whole <= cap and len(data) <= cap:
        return data.decode("utf-8", "replace"), False
    chunk = data[:cap]
    newline = chunk.rfind(b"\n")
    if newline >= cap // 2:
        chunk = chunk[: newline + 1]
    # "ignore" only drops a character the cut split in two; one bad byte more does not matter.
    return chunk.decode("utf-8", "ignore"), True


def sendable(text: str) -> str:
    """Text that encodes as UTF-8: overlay reads and file names keep undecodable bytes as
    lone surrogates, which no request could carry."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:
            return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def fenced(text: str, language: str = "") -> str:
    """A Markdown code block whose fence no run of backticks in ``text`` can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip(chr(10))}\n{fence}"


_LANGUAGES = {
    ".py": "python", ".pyi": "python", ".ts": "typescript", ".tsx": "tsx", ".js": "javascript",
    ".mjs": "javascript", ".cjs": "javascript", ".jsx": "jsx", ".go": "go", ".rs": "rust",
    ".json": "json", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".md": "markdown",
    ".sh": "bash", ".lua": "lua", ".java": "java", ".kt": "kotlin", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".cs": "csharp", ".rb": "ruby", ".php": "php",
    ".html": "html", ".css": "css", ".sql": "sql", ".swift": "swift",
}


def language_of(name: str) -> str:
    if name == "Dockerfile" or name.endswith(".Dockerfile"):
        return "dockerfile"
    return _LANGUAGES.get(os.path.splitext(name)[1].lower(), "")
