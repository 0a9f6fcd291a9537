"""`agentls serve`: the language server, over stdio (default) or TCP.

Stdout belongs to the protocol. The server writes to its own copy of the stdout file
descriptor and reads from its own copy of stdin; descriptors 1 and 0 are pointed at stderr
and /dev/null, so a stray print or a child process can neither corrupt nor steal messages.
Logs go to the editor (window/logMessage), to stderr (warnings) and to --log-file.
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from agentls.base.import_gc import imports_without_gc
from agentls.policy import redaction

if TYPE_CHECKING:
    from agentls.lsp.server import AgentLanguageServer

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Libraries that log every message or HTTP request at INFO: only shown with -vv.
_CHATTY = ("pygls", "httpx", "httpx2", "httpcore", "openai")


def host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(
            f"expected HOST:PORT such as 127.0.0.1:2087, got {value!r}")
    return host.strip("[]"), int(port)


def add_parser(commands: Any) -> None:
    serve = commands.add_parser(
        "serve", help="run the language server for an editor (stdio by default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", type=host_port,
                       help="listen on a TCP port instead of stdio")
    serve.add_argument("--log-file", type=Path, metavar="PATH",
                       help="also write the log to this file")
    serve.add_argument("-v", "--verbose", action="count", default=0,
                       help="log more (-v: debug, -vv: also every LSP message and HTTP request)")


def configure_logging(server: AgentLanguageServer, verbose: int, log_file: Path | None) -> None:
    from agentls.lsp.transport.log_handler import LspLogHandler

    level = logging.DEBUG if verbose else logging.INFO
    root = logging.getLogger()
    root.setLevel(level)
    to_editor = LspLogHandler(server, level)
    to_editor.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    root.addHandler(to_editor)
    to_stderr = logging.StreamHandler(sys.stderr)
    to_stderr.setLevel(logging.WARNING)
    to_stderr.setFormatter(logging.Formatter(LOG_FORMAT))
    root.addHandler(to_stderr)
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        to_file = logging.FileHandler(log_file, encoding="utf-8")
        to_file.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(to_file)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose >= 2 else logging.WARNING)
    redaction.install_log_filter()


def protocol_streams() -> tuple[BinaryIO, BinaryIO]:
    """Private copies of stdin and stdout for the protocol (see the module notes)."""
    sys.stdout.flush()
    protocol_in = os.fdopen(os.dup(0), "rb")
    protocol_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return cast(BinaryIO, protocol_in), cast(BinaryIO, protocol_out)


# Shown when a person starts `agentls serve` in a terminal rather than an editor.
TTY_NOTICE = (
    "agentls serve speaks the Language Server Protocol on stdin/stdout: your editor starts "
    "it (VS Code: the AgentLS extension; Neovim: clients/neovim; any LSP client: command "
    "`agentls serve`). To use AgentLS from a terminal: `agentls run \"...\"`. Ctrl-C quits."
)


def run(args: argparse.Namespace, workspace: Path) -> int:
    with imports_without_gc():
        from agentls.lsp.server import create_server

    person = args.tcp is None and sys.stdin.isatty()
    if person:
        signal.signal(signal.SIGINT, _quit_from_terminal)
        print(TTY_NOTICE, file=sys.stderr, flush=True)
    server = create_server()
    configure_logging(server, args.verbose, args.log_file)
    # `kill -USR1 PID` writes every thread's stack to stderr (the editor's AgentLS log): what a
    # server that stopped answering is doing, without stopping it (docs/CONTRIBUTING.md).
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    if args.tcp is not None:
        host, port = args.tcp
        server.start_tcp(host, port)
    else:
        from agentls.lsp.transport.stdio_loop import serve_stdio

        protocol_in, protocol_out = protocol_streams()
        return serve_stdio(server, protocol_in, protocol_out)
    return 0


def _quit_from_terminal(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C in a terminal. pygls catches KeyboardInterrupt, then waits for its stdin reader
    thread, which is blocked reading the terminal: the server would never stop. No editor is
    attached (stdin is a terminal), and the session store commits each write, so end now."""
    print("agentls serve: stopped", file=sys.stderr, flush=True)
    logging.shutdown()
    os._exit(0)
