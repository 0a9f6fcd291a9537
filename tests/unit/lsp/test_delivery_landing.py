"""Did an applied edit land (lsp/services/landing.py ``not_landed``)? An open document
answers by its text; one closed since (a buffer wiped during the review) by its file, which
is read off the event loop: the wait polls every 20 ms for up to 2 s and must not block the
server meanwhile."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pygls.workspace import TextDocument

from agentls.lsp.services import landing as delivery
from agentls.lsp.services.landing import SentDocument, not_landed


def server(open_docs: dict[Path, str]) -> Any:
    docs = {p.as_uri(): TextDocument(p.as_uri(), text, version=2) for p, text in open_docs.items()}
    return SimpleNamespace(workspace=SimpleNamespace(text_documents=docs))


async def test_open_and_closed_documents_that_hold_the_edit_have_landed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened, closed, crlf = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    closed.write_text("new b\n")
    crlf.write_bytes(b"new c\r\n")
    readers: list[int] = []
    file_holds = delivery._file_holds

    def recorded(sent: SentDocument) -> bool:
        readers.append(threading.get_ident())
        return file_holds(sent)

    monkeypatch.setattr(delivery, "_file_holds", recorded)
    sent = [SentDocument(opened, 1, "new a\n"), SentDocument(closed, 1, "new b\n"),
            SentDocument(crlf, 1, "new c\n")]
    assert await not_landed(server({opened: "new a\n"}), sent, wait_s=0.5) == []
    assert len(readers) == 2
    assert threading.get_ident() not in readers  # read in a worker thread, not on the loop


async def test_what_does_not_hold_it_is_named_after_the_wait(tmp_path: Path) -> None:
    opened, closed, gone = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "gone.py"
    closed.write_text("old b\n")
    sent = [SentDocument(gone, 1, "x\n"), SentDocument(opened, 1, "new a\n"),
            SentDocument(closed, 1, "new b\n")]
    assert await not_landed(server({opened: "old a\n"}), sent, wait_s=0.1) == [gone, opened,
                                                                               closed]
