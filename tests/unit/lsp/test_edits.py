"""ChangeSet → WorkspaceEdit: minimal edits, positions in every encoding, client capabilities."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from lsprotocol import converters
from lsprotocol import types as lsp
from pytest_lsp import client_capabilities

from agentls.lsp.services.edits import minimal_text_edits, plan_workspace_edit, to_workspace_edit
from agentls.workspace.changeset import ChangeSet
from agentls.workspace.fence import Workspace
from agentls.workspace.line_diff import split_lines

ENCODINGS = ("utf-16", "utf-8", "utf-32")


# -- a reference applier: what an editor does with the edits -------------------------------


def _units(char: str, encoding: str) -> int:
    if encoding == "utf-16":
        return len(char.encode("utf-16-le", "surrogatepass")) // 2
    if encoding == "utf-8":
        return len(char.encode("utf-8", "surrogatepass"))
    return 1


def offset_of(text: str, position: lsp.Position, encoding: str) -> int:
    starts = [0]
    for line in split_lines(text):
        if line.endswith(("\n", "\r")):
            starts.append(starts[-1] + len(line))
        else:
            break
    if not text and position == lsp.Position(line=1, character=0):
        return 0  # the end of an empty document, one line past it: clients clamp it
    assert position.line < len(starts), "line out of range"
    offset = starts[position.line]
    units = 0
    while units < position.character:
        assert offset < len(text) and text[offset] not in "\r\n", "character past the line end"
        units += _units(text[offset], encoding)
        offset += 1
    assert units == position.character, "position splits a character"
    if offset and text[offset - 1] == "\r":
        assert offset == len(text) or text[offset] != "\n", "position inside a CRLF"
    return offset


def apply_edits(text: str, edits: Sequence[AnyTextEdit], encoding: str) -> str:
    offsets = [
        (offset_of(text, r.start, encoding), offset_of(text, r.end, encoding), new_text)
        for r, new_text in spans(edits)
    ]
    for (_, end, _), (start, _, _) in itertools.pairwise(offsets):
        assert end <= start, "edits overlap or are out of order"
    for start, end, new_text in reversed(offsets):
        assert start <= end
        text = text[:start] + new_text + text[end:]
    return text


AnyTextEdit = lsp.TextEdit | lsp.AnnotatedTextEdit | lsp.SnippetTextEdit


def spans(edits: Sequence[AnyTextEdit]) -> list[tuple[lsp.Range, str]]:
    """(range, new text) of each edit; we never send snippet edits."""
    out = []
    for edit in edits:
        assert not isinstance(edit, lsp.SnippetTextEdit)
        out.append((edit.range, edit.new_text))
    return out


def pos(line: int, character: int) -> lsp.Position:
    return lsp.Position(line=line, character=character)


# -- minimal_text_edits --------------------------------------------------------------------


def test_one_word_change_is_one_small_edit() -> None:
    old = "def f():\n    return old_value\n\nprint(f())\n"
    new = "def f():\n    return new_value\n\nprint(f())\n"
    [edit] = minimal_text_edits(old, new)
    assert edit.range == lsp.Range(pos(1, 11), pos(1, 14))
    assert edit.new_text == "new"


def test_separate_regions_get_separate_edits() -> None:
    lines = [f"line {i}\n" for i in range(100)]
    new = list(lines)
    new[10] = "line ten\n"
    new[90] = "line ninety\n"
    new.insert(50, "inserted\n")
    edits = minimal_text_edits("".join(lines), "".join(new))
    assert len(edits) == 3
    assert all(e.range.end.line - e.range.start.line <= 1 for e in edits)
    assert apply_edits("".join(lines), edits, "utf-16") == "".join(new)


def test_no_change_no_edits() -> None:
    assert minimal_text_edits("same\n", "same\n") == []


@pytest.mark.parametrize(
    ("encoding", "character"),
    [("utf-16", 3), ("utf-8", 5), ("utf-32", 2)],
)
def test_positions_after_an_emoji(encoding: str, character: int) -> None:
    # 😀 is one code point, two UTF-16 code units (a surrogate pair), four UTF-8 bytes.
    [edit] = minimal_text_edits("a😀b\n", "a😀c\n", encoding)
    assert edit.range == lsp.Range(pos(0, character), pos(0, character + 1))
    assert edit.new_text == "c"


@pytest.mark.parametrize(
    ("encoding", "start", "end"),
    [("utf-16", 2, 4), ("utf-8", 6, 12), ("utf-32", 2, 4)],
)
def test_positions_in_cjk_text(encoding: str, start: int, end: int) -> None:
    old = "# 注释\n中文标识 = 1\n"
    new = "# 注释\n中文变量 = 1\n"
    [edit] = minimal_text_edits(old, new, encoding)
    assert edit.range == lsp.Range(pos(1, start), pos(1, end))
    assert edit.new_text == "变量"
    assert apply_edits(old, [edit], encoding) == new


def test_emoji_replaced_by_emoji_keeps_surrogate_pairs_whole() -> None:
    old = "x = '👍🏽'\n"  # thumbs up + skin tone modifier: two astral code points
    new = "x = '👍🏿'\n"
    [edit] = minimal_text_edits(old, new, "utf-16")
    assert edit.range == lsp.Range(pos(0, 7), pos(0, 9))
    assert edit.new_text == "🏿"


def test_unknown_encoding() -> None:
    with pytest.raises(ValueError, match="position encoding"):
        minimal_text_edits("a", "b", "latin-1")


def test_position_encoding_kind_enum_is_accepted() -> None:
    [edit] = minimal_text_edits("😀a", "😀b", lsp.PositionEncodingKind.Utf8)
    assert edit.range.start == pos(0, 4)


ROUND_TRIP_CASES = [
    ("", "hello\n"),
    ("hello\n", ""),
    ("no newline", "no newline\n"),
    ("newline\n", "newline"),
    ("a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"),
    ("a\r\nb\r\n", "a\nb\n"),  # CRLF → LF, never cut inside a pair
    ("a\nb\n", "a\r\nb\r\n"),
    ("a\rb\rc", "a\rX\rc"),  # lone CR ends a line too
    ("a\rb", "a\r\nb"),
    ("x\r\n", "x\r\r\n"),
    ("😀😀😀\n", "😀🙂😀\n"),
    ("中文\n日本語\n한국어\n", "中文\n日本\n한국어 text\n"),
    ("\ufeffbom line\n", "\ufeffbom LINE\n"),
    ("form\x0cfeed\u2028sep\n", "form\x0cFEED\u2028sep\n"),  # not line breaks in LSP
    ("tab\tsep\n\n\n}\n}\n", "tab\tsep\n\n}\n}\n}\n"),
    ("caf\udce9\n", "caf\udce9 ok\n"),  # undecodable byte kept as a lone surrogate
]


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize(("old", "new"), ROUND_TRIP_CASES)
def test_edits_reproduce_the_new_text(old: str, new: str, encoding: str) -> None:
    assert apply_edits(old, minimal_text_edits(old, new, encoding), encoding) == new


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_random_edits_reproduce_the_new_text(encoding: str) -> None:
    rng = random.Random(20250101)
    alphabet = ["a", "b", " ", "\n", "\r\n", "\r", "😀", "中", "é", "x\n"]
    for _ in range(2000):
        old = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        chars = list(old)
        for _ in range(rng.randint(1, 4)):
            k = rng.randint(0, len(chars))
            roll = rng.random()
            if roll < 0.4:
                chars.insert(k, rng.choice(alphabet))
            elif k < len(chars):
                if roll < 0.7:
                    del chars[k]
                else:
                    chars[k] = rng.choice(alphabet)
        new = "".join(chars)
        edits = minimal_text_edits(old, new, encoding)
        assert apply_edits(old, edits, encoding) == new, (old, new, edits)


def test_long_file_gets_small_edits() -> None:
    lines = [f"    value_{i} = compute({i})  # 注释 😀\n" for i in range(10_000)]
    new = list(lines)
    for k in range(0, 10_000, 1000):
        new[k] = new[k].replace("compute", "recompute")
    new.insert(5_500, "    inserted = True\n")
    old_text, new_text = "".join(lines), "".join(new)
    edits = minimal_text_edits(old_text, new_text)
    assert len(edits) == 11
    assert all(len(e.new_text) <= len("    inserted = True\n") for e in edits)
    assert apply_edits(old_text, edits, "utf-16") == new_text


def test_long_file_of_repeated_lines_stays_precise() -> None:
    """Frequent lines ("}", blank) defeat difflib's autojunk; edits must stay per region."""
    rng = random.Random(7)
    lines = [rng.choice(["}\n", "\n", "    x = 1\n", "    return y\n"]) for _ in range(10_000)]
    new = list(lines)
    for k in range(0, 10_000, 97):
        new[k] = "changed\n"
    old_text, new_text = "".join(lines), "".join(new)
    edits = minimal_text_edits(old_text, new_text)
    assert len(edits) > 50
    assert apply_edits(old_text, edits, "utf-16") == new_text


# -- to_workspace_edit ------------------------------------------------------------------------


def caps(
    *,
    document_changes: bool | None = True,
    resource_operations: tuple[str, ...] | None = ("create", "rename", "delete"),
    annotations: bool = True,
) -> lsp.ClientCapabilities:
    return lsp.ClientCapabilities(
        workspace=lsp.WorkspaceClientCapabilities(
            workspace_edit=lsp.WorkspaceEditClientCapabilities(
                document_changes=document_changes,
                resource_operations=(
                    [lsp.ResourceOperationKind(op) for op in resource_operations]
                    if resource_operations is not None
                    else None
                ),
                change_annotation_support=(
                    lsp.ChangeAnnotationsSupportOptions(groups_on_label=True)
                    if annotations
                    else None
                ),
            )
        )
    )


@pytest.fixture
def project(tmp_path: Path) -> Workspace:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "open.py").write_text("name = 'old'\nother = 1\n")
    (root / "closed.py").write_text("a = 1\nb = 2\n")
    (root / "gone.py").write_text("bye\n")
    (root / "move_me.py").write_text("moved = True\n")
    ws = Workspace([root])
    ws.open_document(root / "open.py", "name = 'old'\nother = 1\n", 12)
    ws.stage_write(ws.resolve("open.py"), "name = 'new 😀'\nother = 1\n")
    ws.stage_write(ws.resolve("closed.py"), "a = 1\nb = 3\n")
    ws.stage_write(ws.resolve("pkg/new.py"), "fresh = 1\n")
    ws.stage_delete(ws.resolve("gone.py"))
    ws.stage_rename(ws.resolve("move_me.py"), ws.resolve("moved.py"))
    return ws


def uri(ws: Workspace, rel: str) -> str:
    return (ws.roots[0] / rel).as_uri()


def test_rich_client_gets_versioned_edits_resource_operations_and_annotations(
    project: Workspace,
) -> None:
    edit = to_workspace_edit(project.changeset, caps(), display=project.display_path)
    assert edit.changes is None
    changes = list(edit.document_changes or [])
    assert [type(c).__name__ for c in changes] == [
        "TextDocumentEdit",  # open.py
        "TextDocumentEdit",  # closed.py
        "CreateFile",  # pkg/new.py
        "TextDocumentEdit",  # its content
        "DeleteFile",  # gone.py
        "RenameFile",  # move_me.py → moved.py
    ]
    open_edit, closed_edit, create, content, delete, rename = changes
    assert isinstance(open_edit, lsp.TextDocumentEdit)
    assert open_edit.text_document == lsp.OptionalVersionedTextDocumentIdentifier(
        uri=uri(project, "open.py"), version=12
    )
    [e] = open_edit.edits
    assert isinstance(e, lsp.AnnotatedTextEdit)
    assert (e.range, e.new_text) == (lsp.Range(pos(0, 8), pos(0, 11)), "new 😀")
    assert isinstance(closed_edit, lsp.TextDocumentEdit)
    assert closed_edit.text_document.version is None
    assert spans(closed_edit.edits) == [(lsp.Range(pos(1, 4), pos(1, 5)), "3")]
    assert isinstance(create, lsp.CreateFile) and create.uri == uri(project, "pkg/new.py")
    assert isinstance(content, lsp.TextDocumentEdit)
    assert content.text_document.uri == create.uri
    assert spans(content.edits) == [(lsp.Range(pos(0, 0), pos(1, 0)), "fresh = 1\n")]
    assert isinstance(delete, lsp.DeleteFile) and delete.uri == uri(project, "gone.py")
    assert isinstance(rename, lsp.RenameFile)
    assert (rename.old_uri, rename.new_uri) == (
        uri(project, "move_me.py"),
        uri(project, "moved.py"),
    )

    annotations = edit.change_annotations or {}
    assert len(annotations) == 5  # one per file
    assert all(a.needs_confirmation is True for a in annotations.values())
    assert annotations["open.py"].label == "AgentLS: update open.py"
    assert annotations["open.py"].description == "+1 -1"
    assert create.annotation_id == "pkg/new.py"
    assert delete.annotation_id == "gone.py"
    assert rename.annotation_id == "move_me.py → moved.py"
    for change in (open_edit, closed_edit, content):
        assert all(getattr(x, "annotation_id", None) in annotations for x in change.edits)


def test_workspace_edit_serialises_to_lsp_json(project: Workspace) -> None:
    edit = to_workspace_edit(
        project.changeset, caps(), position_encoding="utf-8", display=project.display_path
    )
    data = converters.get_converter().unstructure(edit, lsp.WorkspaceEdit)
    assert data["documentChanges"][0]["textDocument"] == {
        "uri": uri(project, "open.py"),
        "version": 12,
    }
    assert data["documentChanges"][0]["edits"][0]["annotationId"] == "open.py"
    assert data["documentChanges"][2] == {
        "kind": "create",
        "uri": uri(project, "pkg/new.py"),
        "annotationId": "pkg/new.py",
    }
    assert data["changeAnnotations"]["gone.py"] == {
        "label": "AgentLS: delete gone.py",
        "needsConfirmation": True,
        "description": "+0 -1",
    }


def path_of(file_uri: str) -> Path:
    return Path(unquote(urlparse(file_uri).path))


def test_edits_apply_back_to_the_new_text(project: Workspace) -> None:
    cs = project.changeset
    edit = to_workspace_edit(cs, caps(annotations=False))
    changes = list(edit.document_changes or [])
    renamed_from = {c.new_uri: c.old_uri for c in changes if isinstance(c, lsp.RenameFile)}
    checked = 0
    for change in changes:
        if not isinstance(change, lsp.TextDocumentEdit):
            continue
        target = change.text_document.uri
        base = cs.base(path_of(renamed_from.get(target, target)))
        assert base is not None
        new = apply_edits(base.text or "", change.edits, "utf-16")
        assert new == cs.current_text(path_of(target))
        checked += 1
    assert checked == 3


def test_without_annotation_support_edits_are_plain(project: Workspace) -> None:
    edit = to_workspace_edit(project.changeset, caps(annotations=False))
    assert edit.change_annotations is None
    for change in edit.document_changes or []:
        if isinstance(change, lsp.TextDocumentEdit):
            assert all(type(e) is lsp.TextEdit for e in change.edits)
        else:
            assert change.annotation_id is None


def test_positions_in_workspace_edit_follow_the_encoding(project: Workspace) -> None:
    project.changeset.clear()
    (project.roots[0] / "closed.py").write_text("# 中文 😀 end\n")
    project.stage_write(project.resolve("closed.py"), "# 中文 😀 END\n")
    for encoding, start in (("utf-8", 14), ("utf-16", 8), ("utf-32", 7)):
        edit = to_workspace_edit(project.changeset, caps(), position_encoding=encoding)
        [doc] = edit.document_changes or []
        assert isinstance(doc, lsp.TextDocumentEdit)
        assert spans(doc.edits) == [(lsp.Range(pos(0, start), pos(0, start + 3)), "END")]


def test_client_without_document_changes_gets_the_changes_map(project: Workspace) -> None:
    plan = plan_workspace_edit(
        project.changeset, caps(document_changes=False, resource_operations=None)
    )
    assert plan.edit.document_changes is None
    assert plan.edit.change_annotations is None
    assert set((plan.edit.changes or {}).keys()) == {
        uri(project, "open.py"),
        uri(project, "closed.py"),
    }
    [e] = (plan.edit.changes or {})[uri(project, "closed.py")]
    assert type(e) is lsp.TextEdit and e.new_text == "3"
    assert [c.kind for c in plan.skipped] == ["create", "delete", "rename"]


def test_no_capabilities_means_the_changes_map(project: Workspace) -> None:
    edit = to_workspace_edit(project.changeset, None)
    assert edit.document_changes is None and edit.changes


def test_without_rename_support_rename_becomes_create_and_delete(project: Workspace) -> None:
    plan = plan_workspace_edit(project.changeset, caps(resource_operations=("create", "delete")))
    assert plan.skipped == ()
    tail = list(plan.edit.document_changes or [])[-3:]
    assert [type(c).__name__ for c in tail] == ["CreateFile", "TextDocumentEdit", "DeleteFile"]
    create, content, delete = tail
    assert isinstance(create, lsp.CreateFile) and create.uri == uri(project, "moved.py")
    assert isinstance(content, lsp.TextDocumentEdit)
    assert spans(content.edits)[0][1] == "moved = True\n"
    assert isinstance(delete, lsp.DeleteFile) and delete.uri == uri(project, "move_me.py")


def test_without_resource_operations_file_operations_are_skipped(project: Workspace) -> None:
    plan = plan_workspace_edit(
        project.changeset, caps(resource_operations=()), display=project.display_path
    )
    assert [c.kind for c in plan.skipped] == ["create", "delete", "rename"]
    assert all(isinstance(c, lsp.TextDocumentEdit) for c in plan.edit.document_changes or [])
    assert set((plan.edit.change_annotations or {}).keys()) == {"open.py", "closed.py"}


def test_rename_with_edit(project: Workspace) -> None:
    project.changeset.clear()
    project.stage_rename(project.resolve("move_me.py"), project.resolve("moved.py"))
    project.stage_write(project.resolve("moved.py"), "moved = False\n")
    edit = to_workspace_edit(project.changeset, caps(annotations=False))
    rename, content = edit.document_changes or []
    assert isinstance(rename, lsp.RenameFile)
    assert isinstance(content, lsp.TextDocumentEdit)
    assert content.text_document.uri == uri(project, "moved.py")
    # "True" → "False": the shared "e" is kept.
    assert spans(content.edits) == [(lsp.Range(pos(0, 8), pos(0, 11)), "Fals")]


def test_recorded_client_capabilities(project: Workspace) -> None:
    vscode = to_workspace_edit(project.changeset, client_capabilities("visual-studio-code"))
    assert vscode.change_annotations
    # Neovim lists resourceOperations without documentChanges, and applies both.
    neovim = plan_workspace_edit(project.changeset, client_capabilities("neovim"))
    assert neovim.skipped == ()
    assert neovim.edit.document_changes and neovim.edit.change_annotations is None


def test_empty_changeset() -> None:
    edit = to_workspace_edit(ChangeSet(), caps())
    assert edit.document_changes == [] and edit.change_annotations is None


# -- exact bytes in Neovim: an insertion never lands on the line past the end ------------


@pytest.mark.parametrize(("old", "new"), [("a\n", "a\nb\n"), ("a\r\n", "a\r\nb\r\n"),
                                          ("x\ny\n", "x\ny\nz\nw\n")])
def test_an_append_goes_before_the_final_newline(old: str, new: str) -> None:
    [edit] = minimal_text_edits(old, new)
    last_line = old.count("\n") - 1
    assert edit.range.start.line == last_line == edit.range.end.line
    assert apply_edits(old, [edit], "utf-16") == new


def test_a_new_documents_text_replaces_up_to_the_line_past_its_end() -> None:
    [edit] = minimal_text_edits("", "a\nb\n")
    assert edit.range == lsp.Range(lsp.Position(0, 0), lsp.Position(1, 0))
    assert edit.new_text == "a\nb\n"
