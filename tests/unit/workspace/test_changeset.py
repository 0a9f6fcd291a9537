"""The ChangeSet: operations, collapsing, diffs, and the all-or-nothing write to disk."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from agentls.workspace import changeset as changeset_module
from agentls.workspace.changeset import (
    ApplyFailed,
    Base,
    ChangeConflict,
    ChangeSet,
    ChangeSetError,
)
from agentls.workspace.line_diff import split_lines


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())
    return path


def kinds(cs: ChangeSet) -> list[tuple[str, str]]:
    return [(c.kind, c.path.name) for c in cs.changes()]


def leftovers(folder: Path) -> list[str]:
    """Temporaries or backups left behind by a write."""
    return sorted(p.name for p in folder.rglob("*") if ".agentls-" in p.name)


# -- operations and collapsing ---------------------------------------------------------------


def test_operations_in_order(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "a\n")
    b = write(tmp_path / "b.txt", "b\n")
    c = write(tmp_path / "c.txt", "c\n")
    cs = ChangeSet()
    assert cs.is_empty()
    cs.update(a, "A\n")
    cs.create(tmp_path / "new.txt", "new\n")
    cs.delete(b)
    cs.rename(c, tmp_path / "d.txt")
    assert kinds(cs) == [
        ("update", "a.txt"),
        ("create", "new.txt"),
        ("delete", "b.txt"),
        ("rename", "d.txt"),
    ]
    rename = cs.changes()[3]
    assert rename.old_path == c and rename.text == "c\n"
    assert cs.paths() == [a, tmp_path / "new.txt", b, c, tmp_path / "d.txt"]
    assert not cs.is_empty()
    # Nothing touched the disk.
    assert a.read_text() == "a\n" and b.exists() and c.exists()
    assert not (tmp_path / "new.txt").exists()


def test_bases_are_recorded(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "a\n")
    cs = ChangeSet()
    cs.update(a, "A\n")
    base = cs.base(a)
    assert base is not None and base.kind == "sha256" and base.text == "a\n"
    cs.create(tmp_path / "n.txt", "n")
    assert cs.base(tmp_path / "n.txt") == Base.absent()
    cs.update(tmp_path / "a.txt", "x", base=Base("ignored", "0" * 64, 9))
    assert cs.base(a) == base  # the first base wins
    cs.write(tmp_path / "open.txt", "o", base=Base("buffer", None, 4))
    assert cs.base(tmp_path / "open.txt") == Base("buffer", None, 4)
    assert Base("t", None, 4).kind == "version"


def test_repeated_updates_keep_first_base_and_latest_text(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "one\n")
    cs = ChangeSet()
    cs.update(a, "two\n")
    a.write_text("changed underneath\n")
    cs.update(a, "three\n")
    [change] = cs.changes()
    assert (change.kind, change.base.text, change.text) == ("update", "one\n", "three\n")


def test_update_back_to_the_original_leaves_nothing(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "one\n")
    cs = ChangeSet()
    cs.update(a, "two\n")
    cs.update(a, "one\n")
    assert cs.is_empty() and not cs.touched(a)


def test_create_then_delete_cancels(tmp_path: Path) -> None:
    cs = ChangeSet()
    cs.create(tmp_path / "n.txt", "x")
    cs.update(tmp_path / "n.txt", "y")
    assert kinds(cs) == [("create", "n.txt")]
    cs.delete(tmp_path / "n.txt")
    assert cs.is_empty()


def test_delete_then_create_is_an_update(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "old\n")
    cs = ChangeSet()
    cs.delete(a)
    assert cs.is_deleted(a) and cs.current_text(a) is None
    assert cs.write(a, "new\n") == "create"
    [change] = cs.changes()
    assert (change.kind, change.base.text, change.text) == ("update", "old\n", "new\n")
    assert not cs.is_created(a)


def test_rename_then_edit(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "a\n")
    cs = ChangeSet()
    cs.rename(a, tmp_path / "b.txt")
    cs.update(tmp_path / "b.txt", "b\n")
    [change] = cs.changes()
    assert (change.kind, change.old_path, change.base.text, change.text) == (
        "rename",
        a,
        "a\n",
        "b\n",
    )
    assert cs.is_deleted(a) and cs.is_created(tmp_path / "b.txt")


def test_rename_chain_collapses(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "a\n")
    cs = ChangeSet()
    cs.rename(a, tmp_path / "b.txt")
    cs.rename(tmp_path / "b.txt", tmp_path / "c.txt")
    assert [(c.kind, c.old_path, c.path) for c in cs.changes()] == [
        ("rename", a, tmp_path / "c.txt")
    ]
    cs.rename(tmp_path / "c.txt", a)
    assert cs.is_empty()


def test_rename_of_created_file_is_a_create(tmp_path: Path) -> None:
    cs = ChangeSet()
    cs.create(tmp_path / "n.txt", "x")
    cs.rename(tmp_path / "n.txt", tmp_path / "m.txt")
    assert kinds(cs) == [("create", "m.txt")]


def test_rename_then_recreate_source(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "a\n")
    cs = ChangeSet()
    cs.rename(a, tmp_path / "b.txt")
    cs.create(a, "fresh\n")
    assert sorted(kinds(cs)) == [("create", "b.txt"), ("update", "a.txt")]


def test_delete_of_rename_target_deletes_source(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "a\n")
    cs = ChangeSet()
    cs.rename(a, tmp_path / "b.txt")
    cs.delete(tmp_path / "b.txt")
    assert kinds(cs) == [("delete", "a.txt")]


def test_invalid_operations(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "a\n")
    b = write(tmp_path / "b.txt", "b\n")
    cs = ChangeSet()
    with pytest.raises(ChangeSetError, match="already exists"):
        cs.create(a, "x")
    with pytest.raises(ChangeSetError, match="does not exist"):
        cs.update(tmp_path / "nope.txt", "x")
    with pytest.raises(ChangeSetError, match="nothing to delete"):
        cs.delete(tmp_path / "nope.txt")
    with pytest.raises(ChangeSetError, match="already exists"):
        cs.rename(a, b)
    with pytest.raises(ChangeSetError, match="onto itself"):
        cs.rename(a, a)
    assert cs.is_empty()


def test_checkpoint_and_restore(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "a\n")
    cs = ChangeSet()
    cs.update(a, "A\n")
    checkpoint = cs.checkpoint()
    cs.update(a, "AA\n")
    cs.create(tmp_path / "n.txt", "n")
    cs.rename(a, tmp_path / "b.txt")
    cs.restore(checkpoint)
    assert kinds(cs) == [("update", "a.txt")]
    assert cs.current_text(a) == "A\n"
    cs.update(a, "again\n")  # the restored state is independent of the snapshot
    cs.restore(checkpoint)
    assert cs.current_text(a) == "A\n"


def test_files_under(tmp_path: Path) -> None:
    cs = ChangeSet()
    cs.create(tmp_path / "d" / "x.txt", "x")
    cs.create(tmp_path / "dd.txt", "x")
    assert cs.files_under(tmp_path / "d") == [tmp_path / "d" / "x.txt"]


# -- diffs -----------------------------------------------------------------------------------


def test_diff_counts(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "1\n2\n3\n4\n")
    cs = ChangeSet()
    cs.update(a, "1\ntwo\n3\n4\n5\n6\n")
    cs.create(tmp_path / "n.txt", "x\ny\n")
    b = write(tmp_path / "b.txt", "gone\n")
    cs.delete(b)
    diffs = cs.diff(lambda p: p.name)
    assert [(d.kind, d.insertions, d.deletions) for d in diffs] == [
        ("update", 3, 1),
        ("create", 2, 0),
        ("delete", 0, 1),
    ]
    assert diffs[0].diff.startswith("--- a/a.txt\n+++ b/a.txt\n@@")
    assert "-2\n+two\n" in diffs[0].diff
    assert diffs[1].diff.startswith("--- /dev/null\n+++ b/n.txt\n")
    assert diffs[2].diff.startswith("--- a/b.txt\n+++ /dev/null\n")
    summary = cs.summary()
    assert (summary.files, summary.created, summary.updated, summary.deleted) == (3, 1, 1, 1)
    assert (summary.insertions, summary.deletions) == (5, 2)
    assert str(summary) == "3 files (1 created, 1 updated, 1 deleted), +5 -2"


def test_diff_marks_missing_final_newline(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "x\ny")
    cs = ChangeSet()
    cs.update(a, "x\ny\n")
    [d] = cs.diff()
    assert "-y\n\\ No newline at end of file\n+y\n" in d.diff
    assert (d.insertions, d.deletions) == (1, 1)


def test_diff_of_pure_rename(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "a\n")
    cs = ChangeSet()
    cs.rename(a, tmp_path / "b.txt")
    [d] = cs.diff(lambda p: p.name)
    assert d.diff == "--- a/a.txt\n+++ b/b.txt\n"
    assert (d.kind, d.old_path, d.insertions, d.deletions) == ("rename", a, 0, 0)
    assert str(cs.summary()) == "1 file (1 renamed), +0 -0"
    assert str(ChangeSet().summary()) == "no changes"


def test_split_lines_only_breaks_on_lsp_line_endings() -> None:
    assert split_lines("a\r\nb\rc\nd\x0ce\u2028f") == ["a\r\n", "b\r", "c\n", "d\x0ce\u2028f"]
    assert split_lines("") == []
    assert split_lines("\n\n") == ["\n", "\n"]


# -- apply_to_disk -----------------------------------------------------------------------------


def test_apply_writes_everything_exactly(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "one\r\ntwo\r\n")
    b = write(tmp_path / "b.txt", "bye\n")
    c = write(tmp_path / "c.txt", "moved")
    cs = ChangeSet()
    cs.update(a, "one\r\nTWO\r\nno final newline")
    cs.create(tmp_path / "new" / "deep" / "n.txt", "héllo 😀\n")
    cs.delete(b)
    cs.rename(c, tmp_path / "sub" / "c2.txt")
    written = cs.apply_to_disk()
    assert a.read_bytes() == b"one\r\nTWO\r\nno final newline"
    assert (tmp_path / "new" / "deep" / "n.txt").read_bytes() == "héllo 😀\n".encode()
    assert not b.exists() and not c.exists()
    assert (tmp_path / "sub" / "c2.txt").read_bytes() == b"moved"
    assert set(written) == {
        a,
        tmp_path / "new" / "deep" / "n.txt",
        b,
        c,
        tmp_path / "sub" / "c2.txt",
    }
    assert leftovers(tmp_path) == []


def test_apply_preserves_file_mode(tmp_path: Path) -> None:
    script = write(tmp_path / "run.sh", "#!/bin/sh\necho hi\n")
    script.chmod(0o750)
    moved = write(tmp_path / "tool.sh", "#!/bin/sh\n")
    moved.chmod(0o711)
    cs = ChangeSet()
    cs.update(script, "#!/bin/sh\necho bye\n")
    cs.rename(moved, tmp_path / "tool2.sh")
    cs.create(tmp_path / "plain.txt", "x")
    old_umask = os.umask(0o022)
    try:
        cs.apply_to_disk()
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert stat.S_IMODE((tmp_path / "tool2.sh").stat().st_mode) == 0o711
    # A new file gets the usual mode, not mkstemp's 0600.
    assert stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode) == 0o644


def test_apply_writes_through_to_the_same_inode_path(tmp_path: Path) -> None:
    """os.replace swaps the file; a reader holding the old path sees the new content."""
    a = write(tmp_path / "a.txt", "a\n")
    cs = ChangeSet()
    cs.update(a, "b\n")
    assert cs.apply_to_disk() == [a]
    assert a.read_text() == "b\n"


def test_rollback_when_second_of_three_writes_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write(tmp_path / "1.txt", "first\n")
    second = write(tmp_path / "2.txt", "second\n")
    third = tmp_path / "made" / "3.txt"  # created in a folder that does not exist yet
    cs = ChangeSet()
    cs.update(first, "FIRST\n")
    cs.update(second, "SECOND\n")
    cs.create(third, "THIRD\n")
    first_inode = first.stat().st_ino

    real_replace = os.replace
    calls: list[Path] = []

    def failing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls.append(Path(dst))
        if Path(dst) == second:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(changeset_module.os, "replace", failing_replace)
    with pytest.raises(ApplyFailed) as info:
        cs.apply_to_disk()
    assert calls[:2] == [first, second]  # the first really was replaced before the failure
    assert info.value.path == second
    assert "2.txt" in str(info.value) and "restored" in str(info.value)
    assert info.value.restore_errors == ()
    assert first.read_text() == "first\n"
    assert first.stat().st_ino == first_inode  # the original file itself is back
    assert second.read_text() == "second\n"
    assert not third.exists() and not third.parent.exists()
    assert leftovers(tmp_path) == []
    assert not cs.is_empty()  # the caller still has the changes


def test_rollback_when_a_delete_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = write(tmp_path / "1.txt", "first\n")
    second = write(tmp_path / "2.txt", "second\n")
    doomed = write(tmp_path / "3.txt", "third\n")
    cs = ChangeSet()
    cs.update(first, "FIRST\n")
    cs.create(tmp_path / "new.txt", "new\n")
    cs.delete(second)
    cs.delete(doomed)
    real_replace = os.replace

    def failing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(src) == doomed:
            raise PermissionError(13, "Permission denied")
        real_replace(src, dst)

    monkeypatch.setattr(changeset_module.os, "replace", failing_replace)
    with pytest.raises(ApplyFailed):
        cs.apply_to_disk()
    assert first.read_text() == "first\n"
    assert second.read_text() == "second\n"
    assert doomed.read_text() == "third\n"
    assert not (tmp_path / "new.txt").exists()
    assert leftovers(tmp_path) == []


def test_rollback_when_staging_fails_on_a_real_error(tmp_path: Path) -> None:
    """No monkeypatching: the second file's parent turns out to be a regular file."""
    first = write(tmp_path / "1.txt", "first\n")
    cs = ChangeSet()
    cs.update(first, "FIRST\n")
    cs.create(tmp_path / "blocker" / "2.txt", "two\n")
    cs.create(tmp_path / "3.txt", "three\n")
    write(tmp_path / "blocker", "I am a file\n")
    with pytest.raises(ApplyFailed) as info:
        cs.apply_to_disk()
    assert isinstance(info.value.cause, NotADirectoryError)
    assert first.read_text() == "first\n"
    assert not (tmp_path / "3.txt").exists()
    assert (tmp_path / "blocker").read_text() == "I am a file\n"
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_rollback_when_a_directory_is_read_only(tmp_path: Path) -> None:
    first = write(tmp_path / "1.txt", "first\n")
    locked = write(tmp_path / "locked" / "2.txt", "second\n")
    cs = ChangeSet()
    cs.update(first, "FIRST\n")
    cs.update(locked, "SECOND\n")
    locked.parent.chmod(0o555)
    try:
        with pytest.raises(ApplyFailed):
            cs.apply_to_disk()
    finally:
        locked.parent.chmod(0o755)
    assert first.read_text() == "first\n"
    assert locked.read_text() == "second\n"


def test_conflict_when_disk_changed(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "a\n")
    b = write(tmp_path / "b.txt", "b\n")
    cs = ChangeSet()
    cs.update(a, "A\n")
    cs.update(b, "B\n")
    cs.create(tmp_path / "c.txt", "C\n")
    b.write_text("someone else\n")
    with pytest.raises(ChangeConflict) as info:
        cs.apply_to_disk()
    assert info.value.paths == (b,)
    assert str(b) in str(info.value)
    assert "Nothing was written" in str(info.value)
    assert a.read_text() == "a\n"
    assert b.read_text() == "someone else\n"
    assert not (tmp_path / "c.txt").exists()
    assert leftovers(tmp_path) == []


def test_conflict_when_created_file_appeared_or_deleted_file_vanished(tmp_path: Path) -> None:
    gone = write(tmp_path / "gone.txt", "g\n")
    cs = ChangeSet()
    cs.create(tmp_path / "new.txt", "mine\n")
    cs.update(gone, "G\n")
    write(tmp_path / "new.txt", "theirs\n")
    gone.unlink()
    with pytest.raises(ChangeConflict) as info:
        cs.apply_to_disk()
    assert set(info.value.paths) == {tmp_path / "new.txt", gone}
    assert (tmp_path / "new.txt").read_text() == "theirs\n"
    assert not gone.exists()


def test_conflict_when_rename_target_appeared(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "a\n")
    cs = ChangeSet()
    cs.rename(a, tmp_path / "b.txt")
    write(tmp_path / "b.txt", "theirs\n")
    with pytest.raises(ChangeConflict) as info:
        cs.apply_to_disk()
    assert info.value.paths == (tmp_path / "b.txt",)
    assert a.exists()


def test_open_buffer_base_checks_the_disk_hash(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "disk\n")
    disk = Base.from_disk(a)
    cs = ChangeSet()
    cs.update(a, "edited\n", base=Base("unsaved buffer\n", disk.sha256, 5))
    assert cs.conflicts() == []
    assert cs.apply_to_disk() == [a]
    assert a.read_text() == "edited\n"
