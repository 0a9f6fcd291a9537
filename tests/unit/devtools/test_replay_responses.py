"""The scripted server's /v1/responses (the API the Codex CLI speaks), read by the real
`openai` client: text and tool calls streamed as Responses events, matching on tool results
sent back as function_call_output items."""

from __future__ import annotations

import json

from openai import OpenAI

from agentls.devtools.replay.command import ReplayServer


def test_responses_stream_text_and_tool_calls_and_match_tool_results(
        server: ReplayServer) -> None:
    server.load({"steps": [
        {"match": {"tool_results": False, "user": "list"}, "reply": {
            "text": "Looking.", "chunk_size": 3,
            "tool_calls": [{"id": "c1", "name": "exec_command", "arguments": {"cmd": "ls"}}]}},
        {"match": {"tool": "exec_command"}, "reply": {"text": "Two files."}},
    ]})
    client = OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    kinds: list[str] = []
    with client.responses.stream(model="scripted-model", input="list the files",
                                 instructions="be brief") as stream:
        for event in stream:
            kinds.append(event.type)
        first = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert kinds.count("response.output_text.delta") == 3  # "Looking." in pieces of 3
    assert first.output_text == "Looking."
    [call] = [item for item in first.output if item.type == "function_call"]
    assert (call.call_id, call.name, json.loads(call.arguments)) == ("c1", "exec_command",
                                                                     {"cmd": "ls"})
    assert first.usage is not None and first.usage.input_tokens > 0

    second = client.responses.create(model="scripted-model", input=[
        {"role": "user", "content": "list the files"},
        {"type": "function_call", "call_id": "c1", "name": "exec_command",
         "arguments": "{\"cmd\": \"ls\"}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.txt\nb.txt"},
    ])
    assert second.output_text == "Two files."
    assert [r.path for r in server.requests] == ["/v1/responses", "/v1/responses"]
