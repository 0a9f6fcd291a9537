"""What the model is told of a review (lsp/services/review_check.notes): each file's fate, the
files rejected whole in one note (the chat shows every note: "Undo Everything Left" over
twenty files was one note per file)."""

from __future__ import annotations

from pathlib import Path

from agentls.lsp.services.review_check import FileReview, notes
from agentls.workspace.change_model import FileChange


def review(name: str, state: str) -> FileReview:
    change = FileChange("update", Path("/ws") / name, None, "new\n")  # type: ignore[arg-type]
    return FileReview(change, state)  # type: ignore[arg-type]


def shown(path: Path) -> str:
    return path.name


def test_files_rejected_whole_are_one_note_where_the_first_was() -> None:
    told = notes([review("a.py", "kept"), review("b.py", "rejected"), review("c.py", "edited"),
                  review("d.py", "rejected"), review("e.py", "rejected")], shown)
    assert told == [
        "the person kept your change to a.py (changed).",
        "the person rejected your changes to b.py, d.py, e.py; they are as they were before "
        "your last turn. Do not make them again unless asked.",
        "the person edited c.py during the review: read it again before changing it.",
    ]


def test_one_rejected_file_is_told_as_before() -> None:
    assert notes([review("a.py", "rejected")], shown) == [
        "the person rejected your change to a.py; it is as it was before your last turn. "
        "Do not make it again unless asked."]
