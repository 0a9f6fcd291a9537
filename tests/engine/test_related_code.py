"""index.chat_context: the search index's best matches for a chat request are added to the
request the model receives (a real index over the project, BM25; the scripted model), and
left out when off, or when the index cannot be opened (the chat goes on)."""

from __future__ import annotations

from pathlib import Path

from agentls.devtools.replay.command import ReplayServer
from agentls.engine.loop.agent import Agent
from agentls.engine.prompt.related_code import HEADING
from agentls.engine.sessions.store import SessionStore
from agentls.llm.pool import BackendPool
from agentls.settings.config import IndexConfig
from tests.engine.conftest import Harness, settings_for


def _project(root: Path) -> None:
    (root / "src" / "net").mkdir(parents=True, exist_ok=True)
    (root / "src" / "net" / "backoff.py").write_text(
        "def retry_after_rate_limit(response, attempt):\n"
        "    \"\"\"Wait before retrying a request the server rate limited.\"\"\"\n"
        "    return min(2 ** attempt, 30)\n")
    (root / "src" / "ui.py").write_text("def draw_button(label):\n    return f'[{label}]'\n")


async def _first_user_message(server: ReplayServer, project: Path, chat_context: int) -> str:
    _project(project)
    settings = settings_for(server, index=IndexConfig(embeddings="none",
                                                      chat_context=chat_context))
    pool = BackendPool(settings)
    store = SessionStore.for_workspace(project)
    try:
        harness = Harness(Agent(settings, pool, store), store, project, server, pool)
        server.load({"steps": [{"reply": {"text": "ok"}, "times": "*"}]})
        result, _ = await harness.run("where do we retry after a rate limit?")
        assert result.stop_reason == "done", result.error_message
        harness.agent.search_hub.close()
    finally:
        await pool.aclose()
        store.close()
    return str(server.requests[-1].body["messages"][-1]["content"])


async def test_on_the_best_matches_come_before_the_request(server: ReplayServer,
                                                          project: Path) -> None:
    from agentls.cli.index_cmd import open_index

    _project(project)
    search = open_index("index", project)
    assert not isinstance(search, int)
    search.update()
    search.close()
    message = await _first_user_message(server, project, 3)
    assert HEADING in message
    assert "src/net/backoff.py:1-3 `retry_after_rate_limit`" in message
    assert message.index(HEADING) < message.index("# Request")
    assert message.rstrip().endswith("where do we retry after a rate limit?")


async def test_off_by_default_nothing_is_added(server: ReplayServer, project: Path) -> None:
    assert IndexConfig().chat_context == 0
    message = await _first_user_message(server, project, 0)
    assert message == "where do we retry after a rate limit?"


async def test_an_index_that_cannot_open_leaves_the_section_out(server: ReplayServer,
                                                              project: Path) -> None:
    (project / ".agentls" / "index.db").mkdir(parents=True)  # not a database file
    message = await _first_user_message(server, project, 3)
    assert HEADING not in message and message.endswith("rate limit?")
