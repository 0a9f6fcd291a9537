"""``agentls acp``: serve one ACP client over stdin/stdout until it closes the stream.

stdout is the protocol: logging goes to stderr (the client shows it in its log view) or to
``--log-file``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import BinaryIO, cast

from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES, AgentSideConnection
from acp.interfaces import Agent

from agentls.acp.handlers import AgentLsAcp
from agentls.acp.wire import LineTransport


def _own_stdio() -> tuple[BinaryIO, BinaryIO]:
    """Private copies of stdin and stdout for the protocol; descriptors 0 and 1 then point at
    /dev/null and stderr, so a stray print or a child process cannot corrupt a message."""
    sys.stdout.flush()
    protocol_in = os.fdopen(os.dup(0), "rb", buffering=0)
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return protocol_in, protocol_out


async def serve() -> None:
    loop = asyncio.get_running_loop()
    protocol_in, protocol_out = _own_stdio()
    reader = asyncio.StreamReader(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), protocol_in)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(), protocol_out)
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    agent = AgentLsAcp()
    conn = AgentSideConnection(cast(Agent, agent), LineTransport(reader, writer),
                               listening=False)
    try:
        await conn.listen()
    finally:
        await agent.aclose()
        await asyncio.shield(conn._conn.close())


def main(log_file: str | None = None, verbose: bool = False) -> int:
    handler: logging.Handler = (logging.FileHandler(log_file) if log_file
                                else logging.StreamHandler(sys.stderr))
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    for chatty in ("httpx", "httpx2", "httpcore", "openai"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    if sys.stdin.isatty():  # started by hand: say what it is waiting for
        print("agentls acp speaks the Agent Client Protocol on stdin/stdout: an editor starts "
              "it (docs/ACP.md). Waiting for a client; Ctrl-C quits.", file=sys.stderr,
              flush=True)
    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        return 130
    return 0
