"""References resolved into attachments and chips; modes' toolboxes; the display-ready
history of sessions stored before turns kept the person's words apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentls.engine import display_history, modes
from agentls.engine.prompt.references import Reference, resolve
from agentls.engine.sessions.store import SessionStore
from agentls.llm.messages import Message
from agentls.workspace.fence import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "w"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("one\ntwo\nthree\n")
    (root / "src" / "blob.bin").write_bytes(b"\x00\x01binary")
    (root / ".env").write_text("K=v\n")
    return Workspace([root])


def test_each_reference_is_a_chip_or_a_refusal_with_its_reason(ws: Workspace,
                                                                tmp_path: Path) -> None:
    (tmp_path / "elsewhere.py").write_text("x = 1\n")
    found = resolve([
        Reference("file", "src/a.py"),
        Reference("file", "src/a.py"),  # twice: one chip
        Reference("selection", "src/a.py", 2, 3),
        Reference("url", "http://example.com"),
        Reference("file", ".env"),
        Reference("file", str(tmp_path / "elsewhere.py")),
        Reference("file", "src/gone.py"),
        Reference("file", "src/blob.bin"),
        Reference("file", "src"),
        Reference("symbol", "parse"),
    ], ws, changes=lambda: "")
    assert [(c.kind, c.name, c.lines, c.range) for c in found.chips] == [
        ("file", "src/a.py", 3, ""), ("selection", "src/a.py", 2, "2-3")]
    assert found.attachments.selection is not None
    assert found.attachments.selection.text == "two\nthree\n"
    assert list(found.attachments.files) == ["src/a.py"]
    reasons = {r.name: r.reason for r in found.refused}
    assert "no network" in reasons["http://example.com"]
    assert "deny list" in reasons[".env"]
    assert "outside the workspace" in reasons[str(tmp_path / "elsewhere.py")]
    assert "does not exist" in reasons["src/gone.py"]
    assert "binary" in reasons["src/blob.bin"]
    assert "folder" in reasons["src"]
    assert "search index is not available" in reasons["parse"]


def test_no_uncommitted_changes_is_said_not_attached(ws: Workspace) -> None:
    found = resolve([Reference("changes")], ws, changes=lambda: "")
    assert not found.attachments and not found.chips
    assert "there are none" in found.refused[0].reason


def test_modes_offer_only_their_tools() -> None:
    assert modes.allowed_tools(modes.get("agent"), None) is None
    ask = modes.allowed_tools(modes.get("ask"), None)
    assert ask is not None and "write_file" not in ask and "shell_exec" not in ask
    edit = modes.allowed_tools(modes.get("edit"), ["read_file", "shell_exec", "edit_file"])
    assert edit == ["read_file", "edit_file"]
    with pytest.raises(modes.UnknownMode, match="the modes are ask"):
        modes.get("yolo")


def test_history_of_an_old_session_keeps_notes_out_of_the_persons_words(
        tmp_path: Path) -> None:
    with SessionStore.for_workspace(tmp_path) as store:
        session = store.create_session(backend="b", model="m")
        store.append(session.id, Message.user(
            "[AgentLS note: the person rejected your changes to a.py]\n\n"
            "# Context attached by the person\n\n## File: a.py\n```\nx\n```\n\n"
            "# Request\n\nthanks"))
        store.append(session.id, Message.assistant("You are welcome."))
        page = display_history.page(store, session.id)
    [turn] = page.turns
    assert turn["user"]["text"] == "thanks"
    assert turn["user"]["notes"] == ["the person rejected your changes to a.py"]
    assert turn["steps"] == [{"kind": "text", "text": "You are welcome."}]
    assert "text" not in turn and "toolCalls" not in turn
