"""Writes that respect the disk: a read-only target refuses the whole ChangeSet before the
first write, and replaced files keep their modes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from agentls.workspace.changeset import ApplyFailed, ChangeSet, NotWritable


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_read_only_file_refuses_the_whole_change_set(tmp_path: Path) -> None:
    first = write(tmp_path / "a.txt", "a\n")
    locked = write(tmp_path / "locked.txt", "locked\n")
    locked.chmod(0o444)
    cs = ChangeSet()
    cs.update(first, "A\n")
    cs.create(tmp_path / "new.txt", "new\n")
    cs.update(locked, "LOCKED\n")
    with pytest.raises(NotWritable) as caught:
        cs.apply_to_disk()
    assert isinstance(caught.value, ApplyFailed)  # the runners' existing handling applies
    assert str(locked) in str(caught.value) and "read-only" in str(caught.value)
    assert first.read_text() == "a\n" and locked.read_text() == "locked\n"
    assert not (tmp_path / "new.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "locked.txt"]


def test_read_only_file_cannot_be_deleted_or_renamed(tmp_path: Path) -> None:
    locked = write(tmp_path / "locked.txt", "locked\n")
    locked.chmod(0o444)
    cs = ChangeSet()
    cs.rename(locked, tmp_path / "moved.txt")
    with pytest.raises(NotWritable):
        cs.apply_to_disk()
    assert locked.read_text() == "locked\n" and not (tmp_path / "moved.txt").exists()


def test_replace_keeps_the_mode(tmp_path: Path) -> None:
    script = write(tmp_path / "run.sh", "#!/bin/sh\n")
    script.chmod(0o754)
    cs = ChangeSet()
    cs.update(script, "#!/bin/sh\necho hi\n")
    cs.apply_to_disk()
    assert stat.S_IMODE(os.stat(script).st_mode) == 0o754
    assert script.read_text() == "#!/bin/sh\necho hi\n"
