"""Git configuration as sandboxed commands see it: the same file without its credentials.

Remote URLs often carry a token (``https://user:TOKEN@host/…``), ``http.extraHeader`` an
``Authorization`` header, a ``[credential]`` section a helper that prints a password. Inside
the sandbox each configuration file git reads for a workspace (the repository's ``config``
and ``config.worktree``, a worktree's common ``config``, the files they ``include``, and
``/etc/gitconfig``) is covered by a read-only, sanitised copy bound over it: URLs lose their
user information, ``[credential …]`` sections and ``extraHeader``, token, password and secret
keys are left out. Everything else stays, so ``git status``, ``git diff`` and ``git log``
work as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path

SYSTEM_CONFIG = Path("/etc/gitconfig")
_MAX_INCLUDES = 10  # git's own limit on include depth

_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=|$)")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s\"']*@")
_SECRET_KEY = re.compile(r"(?i)(extraheader|token|password|passwd|secret|cookie)")
_SECRET_SECTION = re.compile(r"(?i)^credential$")
_INCLUDE_SECTION = re.compile(r"(?i)^include(if)?$")


def sanitise(text: str) -> str:
    """The configuration without credentials (see the module's docstring)."""
    out: list[str] = []
    section = ""
    dropping = False  # inside a left-out key's continuation lines
    for line in text.splitlines(keepends=True):
        if dropping:
            dropping = _continues(line)
            continue
        header = _SECTION.match(line)
        if header is not None:
            section = header.group(1)
            rest = line[header.end():]
            if not _SECRET_SECTION.match(section):
                out.append(_USERINFO.sub(r"\1", line[:header.end()]) + "\n")
            line = rest if rest.strip() else ""
            if not line:
                continue
        if _SECRET_SECTION.match(section):
            dropping = _continues(line)
            continue
        key = _KEY.match(line)
        if key is not None and _SECRET_KEY.search(key.group(1)):
            dropping = _continues(line)
            continue
        out.append(_USERINFO.sub(r"\1", line))
    return "".join(out)


def _continues(line: str) -> bool:
    return line.rstrip("\r\n").endswith("\\")


def included_paths(config: Path, text: str) -> list[Path]:
    """The files a configuration ``include``s (``includeIf`` too, whatever its condition)."""
    found: list[Path] = []
    section = ""
    for line in text.splitlines():
        header = _SECTION.match(line)
        if header is not None:
            section = header.group(1)
            line = line[header.end():]
        if not _INCLUDE_SECTION.match(section):
            continue
        match = re.match(r'^\s*path\s*=\s*(.*?)\s*$', line, re.IGNORECASE)
        if match is None or not match.group(1):
            continue
        value = match.group(1)
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        path = Path(os.path.expanduser(value))
        found.append(path if path.is_absolute() else config.parent / path)
    return found


def repository_configs(root: Path) -> list[Path]:
    """The configuration files git reads for the repository at ``root`` (not the person's
    global one: the sandbox hides homes), with what they include."""
    dot_git = root / ".git"
    git_dirs: list[Path] = []
    if dot_git.is_dir():
        git_dirs.append(dot_git)
    elif dot_git.is_file():  # a worktree: its own folder and the common one
        with contextlib.suppress(OSError, ValueError):
            line = dot_git.read_text(encoding="utf-8").strip()
            own = (root / line.removeprefix("gitdir:").strip()).resolve()
            git_dirs.append(own)
            common = own / "commondir"
            if common.is_file():
                git_dirs.append((own / common.read_text(encoding="utf-8").strip()).resolve())
    pending = [d / name for d in git_dirs for name in ("config", "config.worktree")]
    pending.append(SYSTEM_CONFIG)
    seen: dict[Path, None] = {}
    depth = 0
    while pending and depth <= _MAX_INCLUDES:
        nested: list[Path] = []
        for path in pending:
            if path in seen or not path.is_file():
                continue
            seen[path] = None
            with contextlib.suppress(OSError, UnicodeDecodeError):
                nested += included_paths(path, path.read_text(encoding="utf-8"))
        pending, depth = nested, depth + 1
    return list(seen)


class ConfigMasks:
    """Sanitised copies of a workspace's git configuration, kept in a private folder of this
    process and named by their content (a copy is written once, reused by every command)."""

    def __init__(self) -> None:
        self._folder: Path | None = None

    def _dir(self) -> Path:
        if self._folder is None or not self._folder.is_dir():
            self._folder = Path(tempfile.mkdtemp(prefix="agentls-gitconfig-"))
            weakref.finalize(self, shutil.rmtree, str(self._folder), True)
        return self._folder

    def binds(self, root: Path, visible: Callable[[Path], bool]) -> list[tuple[str, str]]:
        """``(sanitised copy, config file)`` pairs to bind read-only over each file the
        sandbox would show, for the repository at ``root``."""
        out: list[tuple[str, str]] = []
        for config in repository_configs(root):
            if not visible(config):
                continue
            try:
                data = config.read_bytes()
            except OSError:
                continue
            clean = sanitise(data.decode("utf-8", errors="replace")).encode("utf-8")
            copy = self._dir() / (hashlib.sha256(clean).hexdigest()[:32] + ".gitconfig")
            if not copy.exists():
                partial = copy.with_suffix(".part")
                partial.write_bytes(clean)
                os.chmod(partial, 0o444)
                os.replace(partial, copy)
            out.append((str(copy), str(config)))
        return out
