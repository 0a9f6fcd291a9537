"""The file tools through the workspace overlay: nothing reaches the disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentls.tools import files
from agentls.workspace.fence import FenceError, Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def main():\n    return 1\n")
    (tmp_path / "src" / "util.py").write_text("X = 1\n")
    (tmp_path / "README.md").write_text("# demo\n")
    (tmp_path / ".env").write_text("SECRET=1\n")
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.js").write_text("x")
    return Workspace([tmp_path])


def test_list_files_sorted_fenced_and_recursive(ws: Workspace) -> None:
    top = files.list_files(ws, files.ListFilesParams())
    assert top["entries"] == [".gitignore", "README.md", "src/"]
    deep = files.list_files(ws, files.ListFilesParams(recursive=True))
    assert deep["entries"] == [".gitignore", "README.md", "src/", "src/app.py", "src/util.py"]
    only_py = files.list_files(ws, files.ListFilesParams(recursive=True, pattern="*.py"))
    assert only_py["entries"] == ["src/app.py", "src/util.py"]


def test_list_files_caps_at_500(tmp_path: Path) -> None:
    for i in range(520):
        (tmp_path / f"f{i:04}.txt").write_text("")
    result = files.list_files(Workspace([tmp_path]), files.ListFilesParams())
    assert len(result["entries"]) == 500 and result["more"] == "(... and 20 more)"


def test_list_files_sees_the_changeset(ws: Workspace) -> None:
    files.write_file(ws, files.WriteFileParams(path="src/new/mod.py", content="y = 2\n"))
    files.delete_file(ws, files.DeleteFileParams(path="src/util.py"))
    assert files.list_files(ws, files.ListFilesParams(path="src"))["entries"] == [
        "src/app.py", "src/new/"]


def test_read_file_numbered_and_ranges(ws: Workspace) -> None:
    result = files.read_file(ws, files.ReadFileParams(path="src/app.py"))
    assert result["content"] == "1\tdef main():\n2\t    return 1"
    part = files.read_file(ws, files.ReadFileParams(path="src/app.py", start_line=2))
    assert part["content"] == "2\t    return 1"
    past = files.read_file(ws, files.ReadFileParams(path="src/app.py", start_line=9))
    assert past["ok"] is False and "has 2 lines" in past["message"]


def test_read_file_long_file_is_cut_with_a_notice(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 2501)))
    result = files.read_file(Workspace([tmp_path]), files.ReadFileParams(path="big.txt"))
    assert result["end_line"] == 2000 and "start_line" in result["notice"]
    assert result["content"].endswith("line 2000")


def test_read_file_binary_and_missing(tmp_path: Path) -> None:
    (tmp_path / "img.bin").write_bytes(b"\x89PNG\0\0\0" + bytes(100))
    ws = Workspace([tmp_path])
    assert files.read_file(ws, files.ReadFileParams(path="img.bin"))["content"] == (
        "(binary file, 107 bytes)")
    with pytest.raises(FenceError) as info:
        files.read_file(ws, files.ReadFileParams(path="nope.py"))
    assert info.value.code == "NOT_FOUND"


def test_read_file_prefers_unsaved_buffer(ws: Workspace, tmp_path: Path) -> None:
    ws.open_document(tmp_path / "src" / "app.py", "unsaved text\n", 7)
    assert files.read_file(ws, files.ReadFileParams(path="src/app.py"))["content"] == (
        "1\tunsaved text")


def test_write_modes(ws: Workspace, tmp_path: Path) -> None:
    exists = files.write_file(ws, files.WriteFileParams(path="README.md", content="x"))
    assert exists["error"] == "ALREADY_EXISTS" and "overwrite" in exists["message"]
    created = files.write_file(ws, files.WriteFileParams(path="docs/a/b.md", content="hi\n"))
    assert created["action"] == "created"
    files.write_file(ws, files.WriteFileParams(path="README.md", content="more\n",
                                               mode="append"))
    assert ws.read_text(ws.resolve("README.md")) == "# demo\nmore\n"
    assert (tmp_path / "README.md").read_text() == "# demo\n"  # disk untouched
    assert not (tmp_path / "docs").exists()


def test_edit_file_reports_layer_and_diff(ws: Workspace) -> None:
    result = files.edit_file(ws, files.EditFileParams(path="src/app.py", edits=[
        files.Edit(search="return 1", replace="return 2")]))
    assert result["ok"] and result["edits"][0]["layer"] == "exact"
    assert "-    return 1" in result["diff"] and "+    return 2" in result["diff"]


def test_edit_file_no_match_changes_nothing(ws: Workspace) -> None:
    result = files.edit_file(ws, files.EditFileParams(path="src/app.py", edits=[
        files.Edit(search="return 1", replace="return 2"),
        files.Edit(search="not there", replace="x")]))
    assert result["error"] == "NO_MATCH"
    assert ws.changeset.is_empty()


def test_apply_patch_stages_all_or_nothing(ws: Workspace) -> None:
    patch = (
        "*** Begin Patch\n*** Add File: src/new.py\n+print('new')\n"
        "*** Update File: src/app.py\n@@\n def main():\n-    return 1\n+    return 3\n"
        "*** Delete File: src/util.py\n*** End Patch\n"
    )
    result = files.apply_patch(ws, files.ApplyPatchParams(patch=patch))
    assert result["ok"], result
    assert {f["path"] for f in result["files"]} == {"src/new.py", "src/app.py", "src/util.py"}
    assert ws.read_text(ws.resolve("src/app.py")) == "def main():\n    return 3\n"

    bad = (
        "*** Begin Patch\n*** Update File: README.md\n@@\n-# demo\n+# changed\n"
        "*** Add File: .env.local\n+TOKEN=x\n*** End Patch\n"
    )
    before = ws.changeset.changes()
    with pytest.raises(FenceError):
        files.apply_patch(ws, files.ApplyPatchParams(patch=bad))
    assert ws.changeset.changes() == before  # README.md change rolled back


def test_apply_patch_that_does_not_match(ws: Workspace) -> None:
    patch = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-nothing like this\n+x\n" \
            "*** End Patch\n"
    result = files.apply_patch(ws, files.ApplyPatchParams(patch=patch))
    assert result["error"] == "PATCH_FAILED" and "Nothing was changed" in result["message"]


def test_delete_file_refuses_folders(ws: Workspace) -> None:
    assert files.delete_file(ws, files.DeleteFileParams(path="src"))["error"] == "IS_A_DIRECTORY"
    assert files.delete_file(ws, files.DeleteFileParams(path="src/util.py"))["ok"]
    assert ws.changeset.summary().deleted == 1
