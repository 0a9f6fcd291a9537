"""What a chat was built from, told to the editor: instruction files, cached answers."""

from __future__ import annotations

from pathlib import Path

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import AgentClient


async def test_instructions_loaded_are_logged_and_the_done_event_counts_cached_answers(
        client: AgentClient, model: ReplayServer, project: Path) -> None:
    (project / "AGENTS.md").write_text("Answer briefly.\n")
    (project / "src" / "AGENTS.md").write_text("Keep functions small.\n")
    model.load({"steps": [{"reply": {"text": "Hello."}}]})
    result = await client.chat("say hello")
    assert result["stopReason"] == "done"
    events = client.events(result["runId"])
    status = [e for e in events if e["kind"] == "status" and e.get("topic") == "instructions"]
    assert [e["message"] for e in status] == ["instructions: AGENTS.md, src/AGENTS.md"]
    assert events[-1]["kind"] == "done" and events[-1]["cachedTurns"] == 0
    assert any("instructions: AGENTS.md, src/AGENTS.md" in m.message
               for m in client.log_messages)
