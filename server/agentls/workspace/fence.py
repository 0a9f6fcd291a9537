"""The workspace fence and the overlay every tool reads through (DESIGN.md decision 2).

Every path a tool receives goes through ``Workspace.resolve``: it must lie under a root
after normalising ``..`` and resolving symlinks, must not be matched by a ``.gitignore``
(any in the tree, each relative to its own folder, negations included), by
``.agentlsignore`` at the root, or by the deny list, and must be a regular file or a
directory. Reads see the run's ChangeSet first, then the editor's open buffers, then disk.

Decisions worth knowing:
- Backslashes are path separators (``src\\a.py`` is ``src/a.py``): models trained on Windows
  paths write them, and a literal backslash in a file name is rare enough to give up.
- How the deny list and ignore files match (case, precedence) is ``fence_rules.py``'s.
- A symlink is followed: both the path as written and the file it resolves to must pass
  the fence, and the resolved path is the one returned (writes land on the real file).

``Workspace`` is one object: resolving a path through the fence, then reading and staging
through the overlay, share its roots and open documents. The rules themselves are in
``fence_rules.py``; the vocabulary (``WorkspacePath``, ``FenceError`` and its messages, the
path arithmetic) in ``paths.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

from agentls.workspace.changeset import (
    Base,
    ChangeKind,
    ChangeSet,
    decode_bytes,
    encode_text,
    sha256_hex,
)
from agentls.workspace.fence_rules import DEFAULT_DENY, FenceRules
from agentls.workspace.paths import (
    WINDOWS_DRIVE,
    FenceCode,
    FenceError,
    Root,
    WorkspacePath,
    fs_ignores_case,
    inside,
    is_a_directory,
    is_special,
    not_found,
    outside,
    refused,
    rel,
)

# FenceError, FenceCode and WorkspacePath are paths.py's; every caller imports them from here.
__all__ = ["FenceCode", "FenceError", "Workspace", "WorkspacePath"]


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class Workspace:
    """The roots a run may touch, the fence around them, and the overlay it reads through."""

    def __init__(
        self,
        roots: Sequence[str | Path],
        *,
        deny: Sequence[str] = DEFAULT_DENY,
        changeset: ChangeSet | None = None,
    ) -> None:
        if not roots:
            raise ValueError("A workspace needs at least one root folder.")
        built: list[Root] = []
        labels: set[str] = set()
        for given in roots:
            lexical = os.path.abspath(os.fspath(given))
            real = os.path.realpath(lexical)
            if not os.path.isdir(real):
                raise ValueError(f"Workspace root {given} is not a directory.")
            label = os.path.basename(real) or real
            n = 2
            while label in labels:
                label = f"{os.path.basename(real)}-{n}"
                n += 1
            labels.add(label)
            aliases = tuple(dict.fromkeys((real, lexical)))
            built.append(Root(real, label, aliases, fs_ignores_case(real)))
        self._roots = tuple(built)
        self.roots: tuple[Path, ...] = tuple(Path(r.path) for r in built)
        self.deny: tuple[str, ...] = tuple(deny)
        self.changeset: ChangeSet = changeset if changeset is not None else ChangeSet()
        self._rules = FenceRules(self.deny)
        self._documents: dict[str, tuple[str, int]] = {}
        # The editor's text of a file not fed as an open document, asked file by file (ACP's
        # fs/read_text_file); None: the file is unknown to the editor or could not be read.
        self.buffer_source: Callable[[Path], str | None] | None = None

    # -- the fence ---------------------------------------------------------------------

    def resolve(self, path: str) -> WorkspacePath:
        """Map a path the model wrote to a WorkspacePath, or raise FenceError."""
        if not isinstance(path, str):
            raise FenceError("INVALID_PATH", f"Expected a path as a string, got {path!r}.")
        if "\x00" in path:
            raise FenceError(
                "INVALID_PATH",
                f"The path {path!r} contains a NUL byte. Give a plain path relative to the "
                f"workspace root, e.g. 'src/main.py'.",
            )
        text = path.strip()
        if text.startswith("file://"):
            text = unquote(urlparse(text).path)
        text = text.replace("\\", "/")
        # A drive path names another machine's layout unless we run on Windows.
        if (os.name != "nt" and WINDOWS_DRIVE.match(text)) or text.startswith("~"):
            raise outside(path, self._roots)
        if not text:
            text = "."
        lexical_root, lexical = self._lexical(text, path)
        root, real, relative = self._check(path, lexical_root, lexical)
        label = root.label if len(self._roots) > 1 else ""
        return WorkspacePath(Path(root.path), Path(real), relative, label)

    def is_visible(self, abs_path: Path) -> bool:
        """Whether ``resolve`` would accept this absolute path (no exception, for listings)."""
        lexical = os.path.abspath(abs_path)
        root = self._lexical_root(lexical)
        try:
            self._check(str(abs_path), root, lexical)
        except FenceError:
            return False
        return True

    def listing(self) -> contextlib.AbstractContextManager[None]:
        """Around a walk of many entries (``is_visible`` / ``is_visible_entry``): in the block
        this thread stats each ignore file once instead of once per path, so an ignore file
        changed during the walk may count only from the next one."""
        return self._rules.snapshot()

    def is_visible_entry(self, folder_real: str, entry: os.DirEntry[str]) -> bool:
        """``is_visible(Path(entry.path))`` for an entry of ``os.scandir(folder_real)``,
        where ``folder_real`` is a real path (reached without symlinks): the same answer
        without resolving the path and stat-ing it again, which was most of the cost of
        listing a big tree (engine/prompt/facts.py). A symlink takes the full check."""
        try:
            if entry.is_symlink():
                return self.is_visible(Path(entry.path))
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = is_dir or entry.is_file(follow_symlinks=False)
        except OSError:
            return self.is_visible(Path(entry.path))
        real = os.path.join(folder_real, entry.name)
        root = self._real_root(real)
        if root is None:
            return self.is_visible(Path(entry.path))
        if self._rules.refusal(root.path, root.fold_case, rel(real, root.path),
                               is_dir) is not None:
            return False
        return is_file  # neither a file nor a folder: a FIFO, socket or device

    def _lexical(self, text: str, original: str) -> tuple[Root | None, str]:
        if text.startswith("/") or os.path.isabs(text):
            lexical = os.path.normpath(text)
            return self._lexical_root(lexical), lexical
        root = self._roots[0]
        first, _, rest = text.partition("/")
        if len(self._roots) > 1:
            for candidate in self._roots:
                if candidate.label == first:
                    root, text = candidate, rest or "."
                    break
        lexical = os.path.normpath(os.path.join(root.path, text))
        if not inside(lexical, root.path):
            other = self._lexical_root(lexical)  # '..' may lead into another root
            if other is None:
                raise outside(original, self._roots)
            return other, lexical
        return root, lexical

    def _lexical_root(self, lexical: str) -> Root | None:
        best: tuple[int, Root] | None = None
        for root in self._roots:
            for alias in root.aliases:
                if inside(lexical, alias) and (best is None or len(alias) > best[0]):
                    best = (len(alias), root)
        return best[1] if best else None

    def _real_root(self, real: str) -> Root | None:
        best: Root | None = None
        for root in self._roots:
            if inside(real, root.path) and (best is None or len(root.path) > len(best.path)):
                best = root
        return best

    def _check(
        self, original: str, lexical_root: Root | None, lexical: str
    ) -> tuple[Root, str, str]:
        """(root, real path, rel) of a path that passes the fence; FenceError otherwise."""
        real = os.path.realpath(lexical)
        root = self._real_root(real)
        if root is None:
            if lexical_root is not None:
                raise FenceError(
                    "OUTSIDE_WORKSPACE",
                    f"{original!r} is a symlink (or lies under one) that leads outside the "
                    f"workspace, to {real}. Only files inside the workspace can be used; "
                    f"work with the files under the workspace root instead.",
                )
            raise outside(original, self._roots)
        try:
            st: os.stat_result | None = os.stat(real)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise FenceError(
                    "INVALID_PATH",
                    f"{original!r} is a symlink loop. Use the real file's path instead.",
                ) from exc
            st = None
        is_dir = st is not None and stat.S_ISDIR(st.st_mode)
        real_rel = rel(real, root.path)
        refusal = self._rules.refusal(root.path, root.fold_case, real_rel, is_dir)
        if refusal is None and lexical_root is not None:
            for alias in lexical_root.aliases:
                if inside(lexical, alias):
                    lexical_rel = rel(lexical, alias)
                    if lexical_rel != real_rel or lexical_root is not root:
                        refusal = self._rules.refusal(lexical_root.path, lexical_root.fold_case,
                                                      lexical_rel, is_dir)
                    break
        if refusal is not None:
            raise refused(original, refusal)
        if st is not None and is_special(st.st_mode):
            raise FenceError(
                "NOT_A_FILE",
                f"{original!r} is not a regular file (it is a FIFO, socket or device). "
                f"Only regular files and folders can be used.",
            )
        return root, real, real_rel

    def display_path(self, abs_path: Path) -> str:
        """The display form of an absolute path under a root (the path itself otherwise)."""
        real = os.path.normpath(os.path.abspath(abs_path))
        root = self._real_root(real) or self._lexical_root(real)
        if root is None:
            return str(abs_path)
        alias = next(a for a in root.aliases if inside(real, a))
        label = root.label if len(self._roots) > 1 else ""
        return WorkspacePath(Path(root.path), Path(real), rel(real, alias), label).display

    # -- documents the editor has open ---------------------------------------------------

    def open_document(self, abs_path: Path, text: str, version: int) -> None:
        self._documents[os.path.realpath(abs_path)] = (text, version)

    def close_document(self, abs_path: Path) -> None:
        self._documents.pop(os.path.realpath(abs_path), None)

    def document(self, abs_path: Path) -> tuple[str, int] | None:
        return self._documents.get(os.path.realpath(abs_path))

    # -- the overlay ---------------------------------------------------------------------

    def read_text(self, wp: WorkspacePath) -> str:
        """Content as the agent sees it: the ChangeSet, then an open buffer, then disk."""
        self._check_overlay_file(wp)
        pending = self.changeset.current_text(wp.abs)
        if pending is not None:
            return pending
        doc = self._documents.get(str(wp.abs)) or self._fetch_document(wp)
        if doc is not None:
            return doc[0]
        return decode_bytes(self._disk_bytes(wp))

    def _fetch_document(self, wp: WorkspacePath) -> tuple[str, int] | None:
        """Ask ``buffer_source`` (off the event loop only: its answer comes through the loop)
        and keep the answer as an open document, so the edit's base is the text read."""
        if self.buffer_source is None or _on_event_loop():
            return None
        text = self.buffer_source(wp.abs)
        if text is None:
            return None
        self._documents[str(wp.abs)] = (text, 0)
        return text, 0

    def read_bytes(self, wp: WorkspacePath) -> bytes:
        self._check_overlay_file(wp)
        pending = self.changeset.current_text(wp.abs)
        if pending is None:
            doc = self._documents.get(str(wp.abs))
            pending = doc[0] if doc is not None else None
        if pending is not None:
            return encode_text(pending)
        return self._disk_bytes(wp)

    def exists(self, wp: WorkspacePath) -> bool:
        cs = self.changeset
        if cs.is_deleted(wp.abs):
            return bool(cs.files_under(wp.abs))  # a folder can't be deleted, only files
        if cs.current_text(wp.abs) is not None or str(wp.abs) in self._documents:
            return True
        return os.path.exists(wp.abs) or bool(cs.files_under(wp.abs))

    def is_dir(self, wp: WorkspacePath) -> bool:
        cs = self.changeset
        if cs.current_text(wp.abs) is not None:
            return False
        return os.path.isdir(wp.abs) or bool(cs.files_under(wp.abs))

    def base_of(self, wp: WorkspacePath) -> Base:
        """The base a ChangeSet op records for this path: the first one, if already touched;
        else the open buffer (text and version) or the disk content, with the disk hash."""
        recorded = self.changeset.base(wp.abs)
        if recorded is not None:
            return recorded
        try:
            data: bytes | None = self._disk_bytes(wp)
        except FenceError as exc:
            if exc.code != "NOT_FOUND":
                raise
            data = None
        sha = sha256_hex(data) if data is not None else None
        doc = self._documents.get(str(wp.abs))
        if doc is not None:
            return Base(text=doc[0], sha256=sha, version=doc[1])
        return Base(text=decode_bytes(data) if data is not None else None, sha256=sha)

    # -- recording changes (never touches disk) -------------------------------------------

    def stage_write(self, wp: WorkspacePath, text: str) -> ChangeKind:
        """Record new full text for ``wp``; returns "create" or "update"."""
        if self.is_dir(wp):
            raise is_a_directory(wp)
        self._check_parents_are_folders(wp)
        return self.changeset.write(wp.abs, text, base=self.base_of(wp))

    def stage_delete(self, wp: WorkspacePath) -> None:
        self._check_overlay_file(wp)
        if not self.exists(wp):
            raise not_found(wp, self._roots)
        self.changeset.delete(wp.abs, base=self.base_of(wp))

    def stage_rename(self, src: WorkspacePath, dst: WorkspacePath) -> None:
        self._check_overlay_file(src)
        if not self.exists(src):
            raise not_found(src, self._roots)
        if self.exists(dst):
            raise FenceError(
                "ALREADY_EXISTS",
                f"{dst.display!r} already exists. Pick another name, or delete it first.",
            )
        self._check_parents_are_folders(dst)
        self.changeset.rename(
            src.abs, dst.abs, base=self.base_of(src), target_base=self.base_of(dst)
        )

    # -- helpers -------------------------------------------------------------------------

    def _check_overlay_file(self, wp: WorkspacePath) -> None:
        if self.changeset.is_deleted(wp.abs) and not self.changeset.files_under(wp.abs):
            raise FenceError(
                "NOT_FOUND",
                f"{wp.display!r} was deleted (or renamed away) earlier in this run. "
                f"Create it again if you need it.",
            )
        if self.changeset.current_text(wp.abs) is None and self.is_dir(wp):
            raise is_a_directory(wp)

    def _check_parents_are_folders(self, wp: WorkspacePath) -> None:
        parent = wp.abs.parent
        while parent != wp.root and inside(str(parent), str(wp.root)):
            if self.changeset.current_text(parent) is not None or (
                os.path.isfile(parent) and not self.changeset.is_deleted(parent)
            ):
                shown = self.display_path(parent)
                raise FenceError(
                    "INVALID_PATH",
                    f"Cannot put {wp.display!r} there: {shown!r} is a file, not a folder. "
                    f"Pick a path whose parent folders are folders.",
                )
            parent = parent.parent

    def _disk_bytes(self, wp: WorkspacePath) -> bytes:
        try:
            st = os.stat(wp.abs)
        except FileNotFoundError:
            raise not_found(wp, self._roots) from None
        if stat.S_ISDIR(st.st_mode):
            raise is_a_directory(wp)
        if not stat.S_ISREG(st.st_mode):
            raise FenceError("NOT_A_FILE", f"{wp.display!r} is not a regular file.")
        return wp.abs.read_bytes()
