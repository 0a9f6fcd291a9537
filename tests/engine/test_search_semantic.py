"""The agent's search_semantic tool: the model asks, the index is built or refreshed on the
spot, and ranked chunks come back as a tool result (scripted model and embeddings)."""

from __future__ import annotations

import json
from typing import Any

from agentls.index.from_settings import IndexHub
from agentls.settings.config import IndexConfig
from tests.engine.conftest import Harness, settings_for


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def tool_result(harness: Harness, call_id: str) -> dict[str, Any]:
    """The result of one tool call, from the chat requests the scripted server received."""
    return next(json.loads(m["content"]) for r in harness.server.requests
                for m in r.body.get("messages", ())
                if m["role"] == "tool" and m["tool_call_id"] == call_id)


async def test_model_finds_code_by_search_semantic(harness: Harness) -> None:
    settings = settings_for(harness.server, index=IndexConfig(
        embeddings="openai", embedding_base_url=harness.server.base_url,
        embedding_model="scripted-model"))
    harness.agent.search_hub = IndexHub(settings)
    (harness.root / "src" / "limits.py").write_text(
        "def wait_for_quota(response):\n    delay = response.headers['retry-after']\n"
        "    return float(delay)\n")
    harness.server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("search_semantic", "s1", query="where is the quota delay read", top_k=3)]}},
        {"match": {"tool": "search_semantic"}, "reply": {"text": "It is wait_for_quota."}},
    ]})
    result, _ = await harness.run("where do we handle quota waits?")
    assert result.stop_reason == "done", result.error_message
    found = tool_result(harness, "s1")
    assert found["ok"] and found["mode"] == "hybrid", found
    top = found["results"][0]
    assert (top["path"], top["symbol"], top["start_line"], top["end_line"]) == (
        "src/limits.py", "wait_for_quota", 1, 3)
    assert "retry-after" in top["snippet"]
    assert (harness.root / ".agentls" / "index.db").is_file()
    # An edit on disk is seen by the next call: the tool refreshes the index first.
    (harness.root / "src" / "limits.py").write_text("def renamed_quota_wait():\n    pass\n")
    harness.server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("search_semantic", "s2", query="quota wait")]}},
        {"match": {"tool": "search_semantic"}, "reply": {"text": "done"}},
    ]})
    await harness.run("again")
    again = tool_result(harness, "s2")
    assert again["results"][0]["symbol"] == "renamed_quota_wait"
    harness.agent.search_hub.close()


async def test_provider_down_still_answers_with_keywords(harness: Harness) -> None:
    settings = settings_for(harness.server, index=IndexConfig(
        embeddings="openai", embedding_base_url=harness.server.base_url,
        embedding_model="no-such-embedding-model"))
    harness.agent.search_hub = IndexHub(settings)
    harness.server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("search_semantic", "s1", query="add numbers")]}},
        {"match": {"tool": "search_semantic"}, "reply": {"text": "ok"}},
    ]})
    await harness.run("find add")
    found = tool_result(harness, "s1")
    assert found["ok"] and found["mode"] == "bm25"
    assert "model_not_found" in found["warning"]
    assert found["results"][0]["symbol"] == "add"
    harness.agent.search_hub.close()
