"""A cap on what a stdio MCP server may send in one message, applied before the SDK reads it.

The SDK's stdio reader joins a line's pieces by repeated concatenation and then validates the
whole message: a tool that answers 50 MB costs minutes of CPU before AgentLS could cut it to
the model's share. So a stdio server is started under this small relay (Python's standard
library only, run with ``-I -S`` through ``agentls.base.python_child``, so it needs nothing from
AgentLS's installation nor from the working folder): it passes the server's stdout through
line by line and shrinks a line longer than the cap: in a tool result, each text block is cut
to its head and tail with a marker naming the size, a binary block (image, audio, blob) is
replaced by a note; any other oversized message becomes a JSON-RPC error for its id. The
server keeps the relay's stdin and stderr; it dies with the relay (``PR_SET_PDEATHSIG``), and
the relay exits with the server's status.
"""

from __future__ import annotations

from agentls.base.python_child import python_argv

MIN_LINE_CAP = 1 << 20  # bytes; a line under it passes untouched


def line_cap(output_limit: int) -> int:
    """Bytes one message may take: far above what the model is shown (``output_limit``)."""
    return max(MIN_LINE_CAP, output_limit * 16)


def relay_argv(cap: int, command: list[str]) -> list[str]:
    return python_argv("-S", "-c", RELAY, str(cap), *command, isolated=True)


RELAY = r'''
import ctypes, json, os, signal, subprocess, sys
cap = int(sys.argv[1])
def die_with_us():
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass
child = subprocess.Popen(sys.argv[2:], stdout=subprocess.PIPE, preexec_fn=die_with_us)
signal.signal(signal.SIGTERM, lambda *_: (child.terminate(), sys.exit(143)))
def cut(text, keep):
    if len(text) <= keep:
        return text
    return (text[:keep // 2] + "\n[... %d characters cut by AgentLS: the message was over %d "
            "bytes ...]\n" % (len(text) - keep, cap) + text[len(text) - keep // 2:])
def cut_strings(value, keep):
    if isinstance(value, str):
        return cut(value, keep)
    if isinstance(value, list):
        return [cut_strings(v, keep) for v in value]
    if isinstance(value, dict):
        return {k: cut_strings(v, keep) for k, v in value.items()}
    return value
def shrink(raw):
    try:
        message = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(message, dict) or "id" not in message:
        return None
    result = message.get("result")
    keep = max(1000, cap // 8)
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        blocks = []
        for block in result["content"]:
            if not isinstance(block, dict):
                continue
            if isinstance(block.get("text"), str):
                block = dict(block, text=cut(block["text"], keep))
            elif isinstance(block.get("resource"), dict) and isinstance(
                    block["resource"].get("text"), str):
                block = dict(block, resource=dict(block["resource"],
                                                  text=cut(block["resource"]["text"], keep)))
            if len(json.dumps(block)) > keep * 2:
                block = {"type": "text", "text": "[a %s block of %d bytes left out by AgentLS: "
                         "over the %d-byte message cap]" % (block.get("type"),
                                                           len(json.dumps(block)), cap)}
            blocks.append(block)
        result = dict(result, content=blocks)
        if "structuredContent" in result:  # its strings cut too: the SDK checks its schema
            result["structuredContent"] = cut_strings(result["structuredContent"], keep)
            if len(json.dumps(result["structuredContent"])) > cap // 2:
                result.pop("structuredContent")
        return json.dumps(dict(message, result=result)).encode() + b"\n"
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {
        "code": -32603, "message": "the server's answer was %d bytes, over AgentLS's cap of "
        "%d bytes per message" % (len(raw), cap)}}).encode() + b"\n"
source, sink = child.stdout, sys.stdout.buffer
while True:
    line = source.readline(cap + 1)
    if not line:
        break
    if len(line) > cap and not line.endswith(b"\n"):
        parts = [line]
        while not parts[-1].endswith(b"\n"):
            more = source.readline(1 << 22)
            if not more:
                break
            parts.append(more)
        line = shrink(b"".join(parts))
        if line is None:
            continue
    sink.write(line)
    sink.flush()
sys.exit(child.wait())
'''
