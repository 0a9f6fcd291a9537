"""The server keeps the search index current from didSave and didChangeWatchedFiles, in the
background (real server over stdio, scripted embeddings)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types as lsp
from pytest_lsp import client_capabilities

from agentls.devtools.replay.command import ReplayServer
from agentls.index.index import SemanticIndex
from agentls.workspace.fence import Workspace
from tests.lsp.conftest import AgentClient, initialize, options_for

WAIT_S = 60.0  # an upper bound for a loaded machine, not a speed target


def indexed_symbols(root: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{root / '.agentls' / 'index.db'}?mode=ro", uri=True)
    try:
        return {r[0] for r in conn.execute("SELECT symbol FROM chunks")}
    finally:
        conn.close()


async def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while not check():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


async def test_saves_and_watched_changes_reach_the_index(
        bare_client: AgentClient, model: ReplayServer, project: Path) -> None:
    lsp_client = bare_client
    SemanticIndex(Workspace([project])).update()  # an index exists: the server keeps it
    options = options_for(model)
    options["index"] = {"embeddings": "openai", "embedding_base_url": model.base_url,
                        "embedding_model": "scripted-model"}
    await initialize(lsp_client, client_capabilities("visual-studio-code"), project, options)

    quota = project / "src" / "quota.py"
    quota.write_text("def wait_for_quota(response):\n    return response\n")
    lsp_client.text_document_did_save(lsp.DidSaveTextDocumentParams(
        text_document=lsp.TextDocumentIdentifier(uri=quota.as_uri())))
    await wait_until(lambda: "wait_for_quota" in indexed_symbols(project), "the saved file")

    quota.unlink()
    (project / "src" / "calc.py").write_text("def add_numbers(a, b):\n    return a + b\n")
    lsp_client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes=[
        lsp.FileEvent(uri=quota.as_uri(), type=lsp.FileChangeType.Deleted),
        lsp.FileEvent(uri=(project / "src" / "calc.py").as_uri(),
                      type=lsp.FileChangeType.Changed)]))
    await wait_until(lambda: {"add_numbers"} <= indexed_symbols(project)
                     and "wait_for_quota" not in indexed_symbols(project), "the watched changes")
