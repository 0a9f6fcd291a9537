"""Tests for server/agentls/tools/edit/patch.py: parsing and planning Codex apply_patch patches."""

from __future__ import annotations

import pytest

from agentls.tools.edit.patch import (
    AddFile,
    DeleteFile,
    PatchError,
    UpdateChunk,
    UpdateFile,
    parse_patch,
)
from agentls.tools.edit.patch_plan import FileChange, plan_patch


def wrap(body: str) -> str:
    return f"*** Begin Patch\n{body}\n*** End Patch\n"


def plan(patch_text: str, files: dict[str, str]) -> list[FileChange]:
    return plan_patch(parse_patch(patch_text), files.get)


def updated(patch_body: str, original: str, path: str = "f.txt") -> str:
    changes = plan(wrap(f"*** Update File: {path}\n{patch_body}"), {path: original})
    assert len(changes) == 1
    assert changes[0].kind == "update"
    assert changes[0].new_text is not None
    return changes[0].new_text


def parse_error(text: str) -> PatchError:
    with pytest.raises(PatchError) as caught:
        parse_patch(text)
    return caught.value


def plan_error(patch_text: str, files: dict[str, str]) -> PatchError:
    with pytest.raises(PatchError) as caught:
        plan(patch_text, files)
    return caught.value


# --- parsing ----------------------------------------------------------------------------------


def test_parse_every_kind_of_hunk() -> None:
    patch = parse_patch(
        wrap(
            "*** Add File: path/add.py\n+abc\n+def\n"
            "*** Delete File: path/delete.py\n"
            "*** Update File: path/update.py\n*** Move to: path/update2.py\n"
            "@@ def f():\n-    pass\n+    return 123"
        )
    )
    assert patch.hunks == (
        AddFile("path/add.py", "abc\ndef\n", line=2),
        DeleteFile("path/delete.py", line=5),
        UpdateFile(
            "path/update.py",
            "path/update2.py",
            (UpdateChunk("def f():", ("    pass",), ("    return 123",), (), False, 8),),
            line=6,
        ),
    )


def test_parse_update_without_a_first_header_and_with_context_lines() -> None:
    patch = parse_patch(wrap("*** Update File: a.py\n import foo\n+bar\n\n baz"))
    hunk = patch.hunks[0]
    assert isinstance(hunk, UpdateFile)
    (chunk,) = hunk.chunks
    assert chunk.context is None
    assert chunk.old_lines == ("import foo", "", "baz")
    assert chunk.new_lines == ("import foo", "bar", "", "baz")
    assert chunk.context_pairs == ((0, 0), (1, 2), (2, 3))


def test_parse_several_chunks_separated_by_blank_lines_and_end_of_file() -> None:
    patch = parse_patch(
        wrap("*** Update File: a\n@@\n-x\n+y\n\n@@ class A\n-z\n+w\n*** End of File")
    )
    hunk = patch.hunks[0]
    assert isinstance(hunk, UpdateFile)
    first, second = hunk.chunks
    # A blank line directly after a chunk's lines belongs to it, as an empty context line.
    assert first.old_lines == ("x", "") and first.new_lines == ("y", "")
    assert second.context == "class A"
    assert second.end_of_file
    assert not first.end_of_file


def test_parse_add_file_without_lines_is_an_empty_file() -> None:
    patch = parse_patch(wrap("*** Add File: empty.txt"))
    assert patch.hunks == (AddFile("empty.txt", "", line=2),)


@pytest.mark.parametrize("opener", ["<<EOF", "<<'EOF'", '<<"EOF"'])
def test_parse_accepts_a_heredoc_wrapper(opener: str) -> None:
    patch = parse_patch(f"{opener}\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF\n")
    assert patch.hunks == (DeleteFile("x", line=3),)


def test_parse_rejects_a_heredoc_with_mismatched_quotes() -> None:
    error = parse_error("<<\"EOF'\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF\n")
    assert error.line == 1
    assert "first line of the patch must be '*** Begin Patch'" in str(error)


def test_parse_tolerates_whitespace_around_markers_and_crlf() -> None:
    text = (
        "\n\n  *** Begin Patch \r\n  *** Update File: f.txt  \r\n@@\r\n-a\r\n+b\r\n"
        " *** End Patch\r\n"
    )
    patch = parse_patch(text)
    hunk = patch.hunks[0]
    assert isinstance(hunk, UpdateFile)
    assert hunk.path == "f.txt"
    assert hunk.line == 4
    assert hunk.chunks[0].old_lines == ("a",)
    assert hunk.chunks[0].new_lines == ("b",)


def test_parse_error_missing_begin() -> None:
    error = parse_error("*** Update File: a\n@@\n-x\n*** End Patch")
    assert error.line == 1
    assert str(error).startswith("Invalid patch at line 1: the first line")
    assert "A patch looks like" in str(error)


def test_parse_error_missing_end_names_the_last_line() -> None:
    error = parse_error("*** Begin Patch\n*** Add File: a\n+x\n")
    assert error.line == 3
    assert "last line of the patch must be '*** End Patch'" in str(error)


def test_parse_error_line_numbers_count_leading_blank_lines() -> None:
    error = parse_error("\n\n*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch")
    assert error.line == 4
    assert "'*** Frobnicate File: foo' is not a valid file header" in str(error)


def test_parse_error_empty_patch() -> None:
    error = parse_error("*** Begin Patch\n*** End Patch")
    assert "contains no file operations" in str(error)


def test_parse_error_update_without_changes() -> None:
    error = parse_error(wrap("*** Update File: foo.txt"))
    assert error.line == 2
    assert "'*** Update File: foo.txt' has no changes" in str(error)


def test_parse_error_header_without_lines() -> None:
    error = parse_error(wrap("*** Update File: a\n@@"))
    assert error.line == 3
    assert "has no lines" in str(error)


def test_parse_error_end_of_file_right_after_header() -> None:
    error = parse_error(wrap("*** Update File: a\n@@\n*** End of File"))
    assert error.line == 4
    assert "no lines before '*** End of File'" in str(error)


def test_parse_error_unexpected_line_in_a_section() -> None:
    error = parse_error(wrap("*** Update File: a\n@@\nno prefix"))
    assert error.line == 4
    assert "unexpected line 'no prefix'" in str(error)
    assert "' ' (context line), '+' (added line) or '-' (removed line)" in str(error)


def test_parse_error_second_section_without_header() -> None:
    error = parse_error(wrap("*** Update File: a\n@@\n-x\n+y\nstray"))
    assert error.line == 6
    assert "expected a '@@' line" in str(error)


def test_parse_error_add_lines_must_start_with_plus() -> None:
    error = parse_error(wrap("*** Add File: a\n+one\ntwo"))
    assert error.line == 4
    assert "'two' is not a valid file header" in str(error)


# --- planning: locating changes ---------------------------------------------------------------


def test_update_replaces_lines_and_keeps_the_rest() -> None:
    assert updated("@@\n foo\n-bar\n+baz", "foo\nbar\nqux\n") == "foo\nbaz\nqux\n"


def test_context_header_narrows_the_search() -> None:
    original = "def a():\n    return 1\n\ndef b():\n    return 1\n"
    new = updated("@@ def b():\n-    return 1\n+    return 2", original)
    assert new == "def a():\n    return 1\n\ndef b():\n    return 2\n"


def test_chunks_apply_in_file_order() -> None:
    original = "a\nx\nb\nx\n"
    assert updated("@@\n a\n-x\n+1\n@@\n b\n-x\n+2", original) == "a\n1\nb\n2\n"


def test_match_ignoring_trailing_whitespace_keeps_context_lines_as_they_were() -> None:
    original = "keep   \nold\t\nend\n"
    assert updated("@@\n keep\n-old\n+new", original) == "keep   \nnew\nend\n"


def test_match_ignoring_surrounding_whitespace() -> None:
    original = "    if x:\n        go()\n"
    assert updated("@@\n if x:\n-    go()\n+        stop()", original) == (
        "    if x:\n        stop()\n"
    )


def test_match_with_unicode_punctuation_folded() -> None:
    original = "say(“hi — there”)\nnext\n"
    assert updated("@@\n-say(\"hi - there\")\n+say('hi')", original) == "say('hi')\nnext\n"


def test_end_of_file_anchors_the_chunk_at_the_end() -> None:
    original = "x\ny\nx\ny\n"
    assert updated("@@\n x\n-y\n+z\n*** End of File", original) == "x\ny\nx\nz\n"


def test_end_of_file_chunk_that_is_not_at_the_end_fails() -> None:
    error = plan_error(wrap("*** Update File: f\n@@\n-a\n+b\n*** End of File"), {"f": "a\nz\n"})
    assert "must match the file's end" in str(error)


def test_pure_addition_is_appended_at_the_end() -> None:
    assert updated("@@\n+added", "one\ntwo\n") == "one\ntwo\nadded\n"


def test_trailing_newline_is_added_to_an_updated_file() -> None:
    assert updated("@@\n-last\n+LAST", "first\nlast") == "first\nLAST\n"


def test_trailing_empty_line_in_the_patch_stands_for_the_final_newline() -> None:
    assert updated("@@\n-last\n+LAST\n \n*** End of File", "first\nlast\n") == "first\nLAST\n"


def test_crlf_file_keeps_crlf_and_new_lines_get_crlf() -> None:
    original = "a\r\nb\r\nc\r\n"
    assert updated("@@\n a\n-b\n+B1\n+B2", original) == "a\r\nB1\r\nB2\r\nc\r\n"


def test_mixed_endings_keep_each_context_lines_own_ending() -> None:
    original = "a\nb\r\nc\n"
    # New lines take the file's first ending; untouched and context lines keep theirs.
    assert updated("@@\n a\n b\n-c\n+C", original) == "a\nb\r\nC\n"


# --- planning: files --------------------------------------------------------------------------


def test_plan_lists_changes_in_order() -> None:
    changes = plan(
        wrap(
            "*** Add File: new.txt\n+hello\n*** Delete File: old.txt\n"
            "*** Update File: m.txt\n*** Move to: moved/m.txt\n@@\n-1\n+2"
        ),
        {"old.txt": "bye\n", "m.txt": "1\n"},
    )
    assert changes == [
        FileChange("add", "new.txt", None, "hello\n"),
        FileChange("delete", "old.txt", None, None),
        FileChange("update", "m.txt", "moved/m.txt", "2\n"),
    ]


def test_adding_an_existing_file_is_planned_as_an_overwrite() -> None:
    changes = plan(wrap("*** Add File: a.txt\n+new"), {"a.txt": "old\n"})
    assert changes == [FileChange("update", "a.txt", None, "new\n")]


def test_later_hunks_see_earlier_hunks_of_the_same_patch() -> None:
    changes = plan(wrap("*** Add File: a.txt\n+one\n*** Update File: a.txt\n@@\n-one\n+two"), {})
    assert changes[-1] == FileChange("update", "a.txt", None, "two\n")


def test_update_after_delete_in_the_same_patch_fails() -> None:
    error = plan_error(
        wrap("*** Delete File: a.txt\n*** Update File: a.txt\n@@\n-x\n+y"), {"a.txt": "x\n"}
    )
    assert error.path == "a.txt"
    assert "Cannot update 'a.txt' (patch line 3): there is no such file" in str(error)


def test_moved_file_is_readable_at_its_new_path_only() -> None:
    changes = plan(
        wrap("*** Update File: a\n*** Move to: b\n@@\n-1\n+2\n*** Update File: b\n@@\n-2\n+3"),
        {"a": "1\n"},
    )
    assert changes[-1] == FileChange("update", "b", None, "3\n")


def test_move_onto_itself_is_a_plain_update() -> None:
    changes = plan(wrap("*** Update File: a\n*** Move to: a\n@@\n-1\n+2"), {"a": "1\n"})
    assert changes == [FileChange("update", "a", None, "2\n")]


def test_update_of_a_missing_file_suggests_add_file() -> None:
    error = plan_error(wrap("*** Update File: nope.py\n@@\n-a\n+b"), {})
    assert "*** Add File: nope.py" in str(error)


def test_delete_of_a_missing_file_fails() -> None:
    error = plan_error(wrap("*** Delete File: gone.txt"), {})
    assert "Cannot delete 'gone.txt'" in str(error)


# --- planning: failures are complete and helpful ----------------------------------------------


def test_failure_in_a_later_hunk_plans_nothing() -> None:
    reads: list[str] = []

    def read(path: str) -> str | None:
        reads.append(path)
        return {"a.txt": "keep\n", "b.txt": "real line\n"}.get(path)

    patch = parse_patch(
        wrap(
            "*** Update File: a.txt\n@@\n-keep\n+changed\n"
            "*** Update File: b.txt\n@@\n-imagined line\n+new"
        )
    )
    with pytest.raises(PatchError) as caught:
        plan_patch(patch, read)
    message = str(caught.value)
    assert caught.value.path == "b.txt"
    assert "Cannot update 'b.txt': in section 1 (the '@@' at patch line 7)" in message
    assert "imagined line" in message
    assert "1 | real line" in message
    assert "No changes were made" in message
    assert reads == ["a.txt", "b.txt"]


def test_missing_context_header_is_named_with_the_closest_line() -> None:
    original = "class Foo:\n    def run(self):\n        pass\n"
    error = plan_error(
        wrap("*** Update File: f.py\n@@ def runn(self):\n-pass\n+go"), {"f.py": original}
    )
    message = str(error)
    assert "its context line '@@ def runn(self):' was not found" in message
    assert "2 |     def run(self):" in message


def test_sections_out_of_file_order_get_a_hint() -> None:
    original = "a\nb\nc\n"
    error = plan_error(wrap("*** Update File: f\n@@\n-c\n+C\n@@\n-a\n+A"), {"f": original})
    assert "They are at line 1, before where the previous section ended" in str(error)
