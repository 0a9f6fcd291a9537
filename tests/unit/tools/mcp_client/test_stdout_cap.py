"""The relay a stdio MCP server runs under: lines under the cap pass untouched, an oversized
tool result is cut before anyone parses it, any other oversized message becomes an error for
its id, and the server's exit status comes through."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from agentls.tools.mcp.stdout_cap import relay_argv


def relay(lines: list[object], cap: int = 10_000, exit_code: int = 0
          ) -> tuple[list[dict[str, object]], int]:
    with tempfile.TemporaryDirectory() as folder:
        messages = Path(folder) / "messages.jsonl"
        messages.write_text("".join(json.dumps(x) + "\n" for x in lines))
        script = (f"import sys\nsys.stdout.write(open({str(messages)!r}).read())\n"
                  f"sys.exit({exit_code})\n")
        done = subprocess.run(relay_argv(cap, [sys.executable, "-c", script]),
                              capture_output=True, timeout=60, check=False)
    return [json.loads(line) for line in done.stdout.splitlines()], done.returncode


def test_small_messages_pass_untouched_and_the_exit_status_comes_through() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}]}}
    out, code = relay([message, {"jsonrpc": "2.0", "method": "notifications/x"}], exit_code=3)
    assert out == [message, {"jsonrpc": "2.0", "method": "notifications/x"}] and code == 3


def test_an_oversized_tool_result_is_cut_and_says_its_size() -> None:
    big = {"jsonrpc": "2.0", "id": 7, "result": {
        "content": [{"type": "text", "text": "a" * 50_000 + "z" * 50_000},
                    {"type": "image", "data": "x" * 60_000, "mimeType": "image/png"}],
        "structuredContent": {"result": "b" * 100_000}}}
    [out], _ = relay([big])
    content = out["result"]["content"]  # type: ignore[index]
    assert content[0]["text"].startswith("a") and content[0]["text"].endswith("z")
    assert "characters cut by AgentLS: the message was over 10000 bytes" in content[0]["text"]
    assert len(content[0]["text"]) < 2_000
    assert content[1]["type"] == "text" and "image block" in content[1]["text"]
    assert len(out["result"]["structuredContent"]["result"]) < 2_000  # type: ignore[index]


def test_any_other_oversized_message_is_an_error_for_its_id() -> None:
    [out], _ = relay([{"jsonrpc": "2.0", "id": 9, "result": {"resources": ["r" * 20_000]}},
                      {"jsonrpc": "2.0", "method": "notifications/big", "params": "n" * 20_000}])
    assert out["id"] == 9 and "over AgentLS's cap of 10000 bytes" in out["error"]["message"]  # type: ignore[index]
