"""``workspace/executeCommand``: the contract's commands, for palettes and code actions.

``agentls.chat`` takes the ``agentls/chat`` params as its one argument and returns the same
result; ``agentls.cancel`` takes ``{runId}`` (or the id); ``agentls.newSession`` takes an
optional ``{title}`` and returns ``{sessionId}``.

Other features add theirs with ``register_command(server, name, handler)`` before the client
initializes (the advertised ``executeCommandProvider`` lists every registered command). A
handler is ``async def handler(ls, arguments: list) -> result``. Note that pygls 2.1 cannot
cancel a running command through ``$/cancelRequest``: long work should take a progress
token or be stoppable with ``agentls.cancel``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from agentls.lsp import protocol
from agentls.lsp.chat import run_chat
from agentls.lsp.protocol import ParamsError
from agentls.lsp.runs import TurnRefused
from agentls.lsp.server import AgentLanguageServer, logged, refused_error

CommandHandler = Callable[[AgentLanguageServer, list[Any]], Awaitable[Any]]


def register_command(server: AgentLanguageServer, name: str, handler: CommandHandler) -> None:
    """Make ``name`` a workspace/executeCommand command answered by ``handler``."""
    logged_handler = logged(handler)

    async def execute(*arguments: Any) -> Any:
        return await logged_handler(server, list(arguments))

    execute.__name__ = f"command {name}"
    server.command(name)(execute)


async def chat_command(ls: AgentLanguageServer, arguments: list[Any]) -> protocol.ChatResult:
    try:
        params = protocol.parse_chat_params(_single(arguments, protocol.CMD_CHAT))
    except ParamsError as exc:
        raise JsonRpcInvalidParams(str(exc)) from None
    return await run_chat(ls, params)


async def cancel_command(ls: AgentLanguageServer, arguments: list[Any]) -> dict[str, bool]:
    try:
        run_id = protocol.parse_run_id(arguments)
    except ParamsError as exc:
        raise JsonRpcInvalidParams(str(exc)) from None
    return {"cancelled": ls.cancel_run(run_id)}


async def new_session_command(ls: AgentLanguageServer,
                              arguments: list[Any]) -> dict[str, str]:
    options = protocol.plain(arguments[0]) if arguments else {}
    title = options.get("title") if isinstance(options, dict) else None
    if title is not None and not isinstance(title, str):
        raise JsonRpcInvalidParams(f"{protocol.CMD_NEW_SESSION} takes an optional "
                                   '{"title": "..."}')
    try:
        host = await ls.engine()
    except TurnRefused as exc:
        raise refused_error(exc) from None
    settings = host.agent.settings
    info = host.store.create_session(backend=settings.backend,
                                     model=settings.active_backend.model, title=title)
    return {"sessionId": info.id}


def _single(arguments: list[Any], command: str) -> Any:
    if len(arguments) != 1:
        raise ParamsError(f"{command} takes one argument, the agentls/chat params "
                          '(e.g. {"prompt": "..."}), not ' f"{len(arguments)}")
    return arguments[0]


def setup(server: AgentLanguageServer) -> None:
    register_command(server, protocol.CMD_CHAT, chat_command)
    register_command(server, protocol.CMD_CANCEL, cancel_command)
    register_command(server, protocol.CMD_NEW_SESSION, new_session_command)
