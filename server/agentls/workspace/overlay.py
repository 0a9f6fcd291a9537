"""The shadow workspace: the layers a sandboxed command sees, and folding its writes back.

Per workspace root, bottom to top: the root itself (read-only); a *pending* layer rebuilt
before each command from the run's ChangeSet (changed files written out, deleted ones as
overlayfs whiteouts) plus whiteouts for everything the fence's deny list hides (`.env*`,
keys, `.agentls/`); and a per-session *upper* layer in ``.agentls/scratch/`` that catches
every write. After the command, ``fold`` moves what was written to files inside the fence
into the ChangeSet (and out of the upper layer, so the ChangeSet stays the one truth) and
leaves writes to ignored paths (caches, build output) in the upper layer for the session.

A whiteout is a 0/0 character device, which Linux (5.8+) lets anyone create.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import shutil
import stat
import tempfile
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pathspec import GitIgnoreSpec

from agentls.sandbox.bwrap import RootLayers
from agentls.workspace.changeset import ChangeSetError, decode_bytes
from agentls.workspace.fence import FenceError, Workspace, WorkspacePath

SCRATCH_DIR = ("scratch",)
MAX_CAPTURED_BYTES = 1_000_000
"""Bigger files written by a command stay in the scratch layer (a diff cannot show them)."""
_OPAQUE_XATTRS = ("user.overlay.opaque", "trusted.overlay.opaque")
_STATE_DIR = ".agentls"


@dataclass
class FoldResult:
    """What one command's writes did: changes joined to the ChangeSet, and what stayed."""

    changes: list[dict[str, str]] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # written to ignored paths: scratch only
    skipped: list[str] = field(default_factory=list)  # inside the fence but not capturable

    def to_result(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.changes:
            out["changes"] = self.changes
        if self.kept:
            out["kept_in_scratch"] = _sample(self.kept)
        if self.skipped:
            out["not_captured"] = _sample(self.skipped)
        return out


def _sample(items: list[str], limit: int = 20) -> list[str]:
    return items[:limit] + ([f"... and {len(items) - limit} more"] if len(items) > limit else [])


def scratch_root(workspace_root: Path) -> Path:
    """``.agentls/scratch`` of a root, created with the state folder's ``*`` .gitignore."""
    state = workspace_root / _STATE_DIR
    state.mkdir(exist_ok=True)
    with contextlib.suppress(FileExistsError), (state / ".gitignore").open(
            "x", encoding="utf-8") as handle:
        handle.write("*\n")
    path = state.joinpath(*SCRATCH_DIR)
    path.mkdir(exist_ok=True)
    return path


class ShadowWorkspace:
    """The overlay layers of one session over a Workspace's roots."""

    def __init__(self, ws: Workspace, session_key: str) -> None:
        self.ws = ws
        self.layers: list[RootLayers] = []
        self._reported: set[str] = set()
        # The pending layer may not lie inside another lower layer (the workspace): overlayfs
        # refuses overlapping lower layers, so it is a private temporary folder.
        self._pending = Path(tempfile.mkdtemp(prefix=f"agentls-pending-{session_key}-"))
        weakref.finalize(self, shutil.rmtree, str(self._pending), True)
        self._placed: dict[Path, str | None] = {}
        self._sources: dict[Path, Path] = {}  # pending file -> workspace path
        self._scans = [_HiddenScan(root, ws.deny) for root in ws.roots]
        for index, root in enumerate(ws.roots):
            base = scratch_root(root) / session_key / f"root{index}"
            layers = RootLayers(root, self._pending / f"root{index}", base / "upper",
                                base / "work")
            layers.pending.mkdir()
            for d in (layers.upper, layers.work):
                d.mkdir(parents=True, exist_ok=True)
            self.layers.append(layers)

    # -- before a command ----------------------------------------------------------------

    def materialise(self) -> int:
        """Bring every pending layer up to date with the ChangeSet and the deny list; only
        what changed since the last command is written. Returns the entries written."""
        wanted: dict[Path, str | None] = {}  # pending path -> text, None for a whiteout
        for layers, scan in zip(self.layers, self._scans, strict=True):
            for rel in scan.hidden():
                wanted[layers.pending / rel] = None
        for change in self.ws.changeset.changes():
            if change.old_path is not None:
                self._want(wanted, change.old_path, None)
            self._want(wanted, change.path, change.text)
        for target, text in list(self._placed.items()):
            if wanted.get(target, "") != text or target not in wanted:
                _remove(target, self._pending)
                del self._placed[target]
        count = 0
        for target, text in wanted.items():
            if target in self._placed:
                continue
            if text is None:
                _whiteout(target)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(text.encode("utf-8", "surrogateescape"))
                source = self._sources.get(target)
                with contextlib.suppress(OSError):  # keep a script's executable bit
                    if source is not None:
                        os.chmod(target, stat.S_IMODE(os.stat(source).st_mode))
            self._placed[target] = text
            count += 1
        return count

    def _want(self, wanted: dict[Path, str | None], path: Path, text: str | None) -> None:
        layers = self._layers_of(path)
        if layers is not None:
            target = layers.pending / path.relative_to(layers.root)
            wanted[target] = text
            self._sources[target] = path

    def _layers_of(self, path: Path) -> RootLayers | None:
        for layers in self.layers:
            if path == layers.root or layers.root in path.parents:
                return layers
        return None

    # -- after a command -----------------------------------------------------------------

    def fold(self) -> FoldResult:
        """Move the captured writes to fenced files into the ChangeSet (see the module doc)."""
        result = FoldResult()
        writes: dict[Path, str] = {}
        deletes: list[WorkspacePath] = []
        new_ignores: list[tuple[Path, GitIgnoreSpec]] = []
        for layers in self.layers:
            for base, dirs, files in os.walk(layers.upper):
                base_path = Path(base)
                spec = _new_ignore_file(base_path, layers.root / base_path.relative_to(
                    layers.upper))
                if spec is not None:
                    new_ignores.append(spec)
                for name in list(dirs):
                    entry = base_path / name
                    target = layers.root / entry.relative_to(layers.upper)
                    wp = self._fenced(target, new_ignores, is_dir=True)
                    if wp is None:  # an ignored folder: everything below stays in scratch
                        dirs.remove(name)
                        self._keep(target, result)
                    elif _is_opaque(entry):
                        deletes += self._hidden_by_opaque(layers, entry, target)
                        _clear_opaque(entry)
                for name in files:
                    entry = base_path / name
                    target = layers.root / entry.relative_to(layers.upper)
                    wp = self._fenced(target, new_ignores)
                    if wp is None:
                        self._keep(target, result)
                        continue
                    self._capture(entry, wp, writes, deletes, result)
        self._apply(writes, deletes, result)
        return result

    def _capture(self, entry: Path, wp: WorkspacePath, writes: dict[Path, str],
                 deletes: list[WorkspacePath], result: FoldResult) -> None:
        st = os.lstat(entry)
        if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:  # a whiteout: deleted
            deletes += self._existing_under(wp)
            entry.unlink()
        elif stat.S_ISREG(st.st_mode):
            if st.st_size > MAX_CAPTURED_BYTES:
                result.skipped.append(f"{wp.display} (over 1 MB)")
                return
            data = entry.read_bytes()
            if b"\0" in data:
                result.skipped.append(f"{wp.display} (binary)")
                return
            writes[wp.abs] = decode_bytes(data)
            entry.unlink()
        else:
            result.skipped.append(f"{wp.display} (not a regular file)")

    def _keep(self, target: Path, result: FoldResult) -> None:
        shown = self.ws.display_path(target)
        if shown not in self._reported:  # each kept path is reported once a session
            self._reported.add(shown)
            result.kept.append(shown)

    def _apply(self, writes: dict[Path, str], deletes: list[WorkspacePath],
               result: FoldResult) -> None:
        ws = self.ws
        gone = {wp.abs: wp for wp in deletes if ws.exists(wp) and wp.abs not in writes}
        by_text: dict[str, Path] = {}
        for path in gone:
            with contextlib.suppress(FenceError):
                by_text.setdefault(ws.read_text(gone[path]), path)
        for path, text in writes.items():
            try:
                wp = ws.resolve(str(path))
                source = by_text.pop(text, None)
                if source is not None and not ws.exists(wp):
                    ws.stage_rename(gone.pop(source), wp)
                    result.changes.append({"path": wp.display, "kind": "rename",
                                           "from": ws.display_path(source)})
                    continue
                if ws.exists(wp) and ws.read_text(wp) == text:
                    continue  # rewritten with the same content
                kind = ws.stage_write(wp, text)
                result.changes.append({"path": wp.display, "kind": kind})
            except (FenceError, ChangeSetError) as exc:
                result.skipped.append(f"{ws.display_path(path)} ({exc})")
        for wp in gone.values():
            try:
                ws.stage_delete(wp)
                result.changes.append({"path": wp.display, "kind": "delete"})
            except (FenceError, ChangeSetError) as exc:
                result.skipped.append(f"{wp.display} ({exc})")

    def _fenced(self, path: Path, new_ignores: Sequence[tuple[Path, GitIgnoreSpec]] = (),
                is_dir: bool = False) -> WorkspacePath | None:
        """``path`` if the fence lets the agent change it, else None. ``new_ignores`` are
        .gitignore files the command wrote itself (`.pytest_cache/.gitignore`): they count."""
        for folder, spec in new_ignores:
            if folder == path or folder in path.parents:
                rel = path.relative_to(folder).as_posix() if path != folder else "."
                if spec.match_file(rel + ("/" if is_dir else "")):
                    return None
        try:
            return self.ws.resolve(str(path))
        except FenceError:
            return None

    def _existing_under(self, wp: WorkspacePath) -> list[WorkspacePath]:
        """The files a whiteout at ``wp`` removed: the file, or every file of the folder."""
        if not self.ws.is_dir(wp):
            return [wp] if self.ws.exists(wp) else []
        return list(self._view_files(wp.abs))

    def _hidden_by_opaque(self, layers: RootLayers, entry: Path, directory: Path
                          ) -> list[WorkspacePath]:
        """Files of the view under a folder that was removed and made again: those the new
        folder (``entry`` in the upper layer) does not hold any more are deleted."""
        del layers
        return [wp for wp in self._view_files(directory)
                if not os.path.lexists(entry / wp.abs.relative_to(directory))]

    def _view_files(self, directory: Path) -> Iterator[WorkspacePath]:
        seen: set[Path] = set()
        candidates = list(self.ws.changeset.files_under(directory))
        if directory.is_dir():
            for base, dirs, files in os.walk(directory):
                dirs[:] = [d for d in dirs if self._fenced(Path(base) / d) is not None]
                candidates += [Path(base) / f for f in files]
        for path in candidates:
            if path in seen:
                continue
            seen.add(path)
            wp = self._fenced(path)
            if wp is not None and self.ws.exists(wp) and not self.ws.is_dir(wp):
                yield wp


def hidden_layers(ws: Workspace, folder: Path) -> list[RootLayers]:
    """Layers of a read-only view of the workspace (an MCP server's): per root, a folder under
    ``folder`` holding whiteouts for what the deny list hides; no pending changes, no upper
    layer (``bwrap_argv(read_only=True)`` mounts them)."""
    out: list[RootLayers] = []
    for index, root in enumerate(ws.roots):
        pending = folder / f"root{index}"
        pending.mkdir(parents=True, exist_ok=True)
        for rel in _HiddenScan(root, ws.deny).hidden():
            _whiteout(pending / rel)
        out.append(RootLayers(root, pending, pending, pending))
    return out


class _HiddenScan:
    """What the deny list hides under a root (relative posix paths; the topmost folder for
    a folder pattern; `.git` excepted, the sandbox shows it read-only). One walk, then kept
    while no folder's mtime changed: a new file anywhere changes its folder's mtime."""

    def __init__(self, root: Path, deny: Sequence[str]) -> None:
        self.root = root
        self.folders = {p.strip("/").lower() for p in deny
                        if p.endswith("/") and "/" not in p.strip("/") and p != ".git/"}
        names = [p.lower() for p in deny if "/" not in p and not p.startswith("!")]
        self.names = re.compile("|".join(fnmatch.translate(n) for n in names) or "(?!)")
        nested = [p for p in deny if "/" in p.rstrip("/") or p.startswith("!")]
        self.paths = GitIgnoreSpec.from_lines([p.lower() for p in nested]) if nested else None
        self._mtimes: dict[str, int] = {}
        self._hidden: list[str] = []

    def hidden(self) -> list[str]:
        if not self._mtimes or any(_mtime(d) != m for d, m in self._mtimes.items()):
            self._mtimes, self._hidden = {}, []
            self._walk(str(self.root), "")
        return self._hidden

    def _walk(self, folder: str, rel: str) -> None:
        self._mtimes[folder] = _mtime(folder)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for entry in entries:
            path = f"{rel}{entry.name}"
            lowered = path.lower()
            is_dir = entry.is_dir(follow_symlinks=False)
            if is_dir and entry.name == ".git" and not rel:
                continue
            if (is_dir and entry.name.lower() in self.folders) or (
                    not is_dir and self.names.match(entry.name.lower())) or (
                    self.paths is not None and self.paths.match_file(
                        lowered + ("/" if is_dir else ""))):
                self._hidden.append(path)
            elif is_dir:
                self._walk(entry.path, path + "/")


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _remove(target: Path, top: Path) -> None:
    """Take ``target`` out of a pending layer, and the folders it leaves empty."""
    with contextlib.suppress(FileNotFoundError):
        target.unlink()
    parent = target.parent
    while parent != top and top in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent


def _new_ignore_file(upper_dir: Path, target: Path) -> tuple[Path, GitIgnoreSpec] | None:
    """The rules of a .gitignore a command wrote in ``upper_dir`` (shown at ``target``)."""
    ignore = upper_dir / ".gitignore"
    if not ignore.is_file() or ignore.is_symlink():
        return None
    try:
        lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return target, GitIgnoreSpec.from_lines(lines)


def _whiteout(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        return
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(0, 0))


def _is_opaque(path: Path) -> bool:
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return False
    return any(n in names for n in _OPAQUE_XATTRS)


def _clear_opaque(path: Path) -> None:
    # Folded: the pending layer now holds the folder's truth, which must show through again.
    for name in _OPAQUE_XATTRS:
        with contextlib.suppress(OSError):
            os.removexattr(path, name, follow_symlinks=False)
