"""The file tools: list, read, write, edit, patch, delete.

Reads go through the workspace overlay (pending changes, then open buffers, then disk);
changes are staged in the run's ChangeSet and never touch the disk (DESIGN.md decision 1).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentls.tools.edit.diff_window import unified_diff
from agentls.tools.edit.matching import MatchError, apply_edits
from agentls.tools.edit.patch import PatchError, parse_patch
from agentls.tools.edit.patch_plan import plan_patch
from agentls.tools.output import fail, ok
from agentls.workspace.fence import Workspace, WorkspacePath

LIST_LIMIT = 500
READ_LINE_LIMIT = 2_000
BINARY_SNIFF_BYTES = 8_192
DIFF_PREVIEW_LIMIT = 3_000


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ListFilesParams(Params):
    path: str = Field(".", description="Folder to list.")
    recursive: bool = Field(False, description="Include everything below it.")
    pattern: str | None = Field(
        None, description="Glob, gitignore syntax as in rg -g: '*.py', 'src/**/test_*.py', "
        "'/setup.py' (anchored)."
    )


class ReadFileParams(Params):
    path: str = Field(description="File to read.")
    start_line: int | None = Field(None, ge=1, description="First line (1-based).")
    end_line: int | None = Field(None, ge=1, description="Last line (inclusive).")


class WriteFileParams(Params):
    path: str = Field(description="File to write.")
    content: str = Field(description="The full text.")
    mode: Literal["create", "overwrite", "append"] = Field(
        "create", description="create fails if the file exists.")


class Edit(Params):
    search: str = Field(description="Exact text, found exactly once (include surrounding "
                        "lines).")
    replace: str = Field(description="Replacement.")


class EditFileParams(Params):
    path: str = Field(description="File to edit.")
    edits: list[Edit] = Field(min_length=1, description="Applied in order, all or none.")


class ApplyPatchParams(Params):
    patch: str = Field(
        description="'*** Begin Patch', then sections '*** Add File: path' (lines prefixed "
        "'+'), '*** Update File: path' (optional '*** Move to: path', then '@@' hunks of ' ' "
        "context, '-' removed, '+' added lines), '*** Delete File: path'; '*** End Patch'."
    )


class DeleteFileParams(Params):
    path: str = Field(description="File to delete.")


# --- list_files ----------------------------------------------------------------------------


def list_files(ws: Workspace, params: ListFilesParams) -> dict[str, Any]:
    folder = ws.resolve(params.path)
    if not ws.exists(folder):
        return fail("NOT_FOUND", f"{folder.display!r} does not exist. Try list_files on its "
                    "parent folder.")
    if not ws.is_dir(folder):
        return fail("NOT_A_FOLDER", f"{folder.display!r} is a file; use read_file.")
    entries = sorted(_entries(ws, folder, params.recursive))
    if params.pattern:
        try:
            spec = _glob_spec(params.pattern)
        except ValueError as exc:
            return fail("BAD_PATTERN", f"{params.pattern!r} is not a valid glob ({exc}). Use "
                        "gitignore syntax: '*.py', 'src/**/test_*.py', '/setup.py'.")
        prefix = "" if folder.display in ("", ".") else folder.display.rstrip("/") + "/"
        entries = [e for e in entries if _glob_match(spec, e, prefix)]
    shown = entries[:LIST_LIMIT]
    result = ok(path=folder.display, entries=shown, count=len(entries))
    if len(entries) > LIST_LIMIT:
        result["more"] = f"(... and {len(entries) - LIST_LIMIT} more)"
    return result


@functools.lru_cache(maxsize=64)
def _glob_spec(pattern: str) -> Any:
    """Gitignore glob syntax (as ripgrep's -g and .gitignore read it): ``*`` stays within a
    folder, ``**`` crosses folders, a pattern without ``/`` matches at any depth, a leading
    ``/`` anchors it."""
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines([pattern])


def _glob_match(spec: Any, entry: str, prefix: str) -> bool:
    """``entry`` is relative to the workspace root; the glob may be written relative to the
    root or to the folder being listed."""
    inside = entry[len(prefix):] if prefix and entry.startswith(prefix) else entry
    return bool(spec.match_file(inside) or spec.match_file(entry))


def _entries(ws: Workspace, folder: WorkspacePath, recursive: bool) -> set[str]:
    """Display paths (folders end in '/') as the overlay sees them, fence applied."""
    with ws.listing():
        return _entries_of(ws, folder, recursive)


def _entries_of(ws: Workspace, folder: WorkspacePath, recursive: bool) -> set[str]:
    found: set[str] = set()
    cs = ws.changeset
    for current, dirs, files in os.walk(folder.abs):
        here = Path(current)
        kept = []
        for name in sorted(dirs):
            path = here / name
            if ws.is_visible(path):
                found.add(ws.display_path(path) + "/")
                kept.append(name)
        dirs[:] = kept if recursive else []
        for name in files:
            path = here / name
            if not cs.is_deleted(path) and ws.is_visible(path):
                found.add(ws.display_path(path))
    for path in cs.files_under(folder.abs):
        relative = path.relative_to(folder.abs)
        if not recursive and len(relative.parts) > 1:
            found.add(ws.display_path(folder.abs / relative.parts[0]) + "/")
        elif ws.is_visible(path):
            found.add(ws.display_path(path))
    return found


# --- read_file -----------------------------------------------------------------------------


def read_file(ws: Workspace, params: ReadFileParams) -> dict[str, Any]:
    wp = ws.resolve(params.path)
    data = ws.read_bytes(wp)
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return ok(path=wp.display, content=f"(binary file, {len(data)} bytes)", binary=True)
    lines = ws.read_text(wp).splitlines()
    total = len(lines)
    start = params.start_line or 1
    end = params.end_line or total
    if params.start_line is not None and params.end_line is not None and end < start:
        return fail("INVALID_RANGE", f"end_line {end} is before start_line {start}.")
    if total and start > total:
        return fail("INVALID_RANGE", f"{wp.display!r} has {total} lines; start_line {start} is "
                    f"past the end. Ask for a range within 1-{total}.")
    end = min(end, total)
    notice = None
    if params.start_line is None and params.end_line is None and total > READ_LINE_LIMIT:
        end = READ_LINE_LIMIT
        notice = (f"File has {total} lines; showing 1-{end}. Call read_file with start_line "
                  f"and end_line to read further.")
    width = len(str(end))
    numbered = "\n".join(f"{n:>{width}}\t{lines[n - 1]}" for n in range(start, end + 1))
    result = ok(path=wp.display, content=numbered, start_line=start, end_line=end,
                total_lines=total)
    if notice:
        result["notice"] = notice
    return result


# --- write_file ----------------------------------------------------------------------------


def write_file(ws: Workspace, params: WriteFileParams) -> dict[str, Any]:
    wp = ws.resolve(params.path)
    exists = ws.exists(wp)
    if exists and params.mode == "create":
        return fail("ALREADY_EXISTS", f"{wp.display!r} already exists. Use mode 'overwrite' to "
                    "replace it, or edit_file to change part of it.")
    text = params.content
    if exists and params.mode == "append":
        text = ws.read_text(wp) + text
    before = ws.read_text(wp) if exists else ""
    action = ws.stage_write(wp, text)
    return ok(path=wp.display, action="created" if action == "create" else "updated",
              lines=len(text.splitlines()), diff=_preview(before, text, wp.display))


# --- edit_file -----------------------------------------------------------------------------


def edit_file(ws: Workspace, params: EditFileParams) -> dict[str, Any]:
    wp = ws.resolve(params.path)
    before = ws.read_text(wp)
    try:
        outcome = apply_edits(before, [(e.search, e.replace) for e in params.edits])
    except MatchError as exc:
        return fail(exc.code, f"{wp.display}: {exc.message}", edit_index=exc.edit_index)
    ws.stage_write(wp, outcome.text)
    applied = [
        {"layer": edit.layer, "lines": f"{edit.start_line}-{edit.end_line}"}
        for edit in outcome.edits
    ]
    return ok(path=wp.display, edits=applied, diff=_preview(before, outcome.text, wp.display))


# --- apply_patch ---------------------------------------------------------------------------


def apply_patch(ws: Workspace, params: ApplyPatchParams) -> dict[str, Any]:
    try:
        patch = parse_patch(params.patch)
    except PatchError as exc:
        return fail("INVALID_PATCH", str(exc))
    resolved: dict[str, WorkspacePath] = {}

    def resolve(path: str) -> WorkspacePath:
        if path not in resolved:
            resolved[path] = ws.resolve(path)
        return resolved[path]

    def read(path: str) -> str | None:
        wp = resolve(path)
        return ws.read_text(wp) if ws.exists(wp) else None

    try:
        changes = plan_patch(patch, read)
    except PatchError as exc:
        return fail("PATCH_FAILED", str(exc) + " Nothing was changed.")
    checkpoint = ws.changeset.checkpoint()
    summary: list[dict[str, str]] = []
    try:
        for change in changes:
            wp = resolve(change.path)
            if change.kind == "delete":
                ws.stage_delete(wp)
                summary.append({"path": wp.display, "action": "deleted"})
                continue
            assert change.new_text is not None
            if change.new_path is not None:
                target = resolve(change.new_path)
                ws.stage_write(wp, change.new_text)
                if target.abs != wp.abs and ws.exists(target) and not ws.is_dir(target):
                    ws.stage_delete(target)  # as in codex, a move overwrites its destination
                ws.stage_rename(wp, target)
                summary.append({"path": target.display, "action": f"moved from {wp.display}"})
            else:
                action = ws.stage_write(wp, change.new_text)
                summary.append({"path": wp.display,
                                "action": "created" if action == "create" else "updated"})
    except Exception:
        ws.changeset.restore(checkpoint)  # all of the patch or none of it
        raise
    return ok(files=summary)


# --- delete_file ---------------------------------------------------------------------------


def delete_file(ws: Workspace, params: DeleteFileParams) -> dict[str, Any]:
    wp = ws.resolve(params.path)
    if ws.is_dir(wp):
        return fail("IS_A_DIRECTORY", f"{wp.display!r} is a folder; delete_file removes files "
                    "only. Delete the files inside it one by one if that is really intended.")
    ws.stage_delete(wp)
    return ok(path=wp.display, action="deleted")


def _preview(before: str, after: str, label: str) -> str:
    """A short unified diff so the model can check what it changed."""
    lines = unified_diff(before, after, f"a/{label}", f"b/{label}", n=2)
    text = "\n".join(lines)
    if len(text) > DIFF_PREVIEW_LIMIT:
        text = text[:DIFF_PREVIEW_LIMIT] + "\n[... diff cut ...]"
    return text
