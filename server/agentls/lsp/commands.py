"""``workspace/executeCommand``: how features register the contract's commands.

The chat commands (``agentls.chat``, ``agentls.cancel``, ``agentls.newSession``) live in
chat.py, the code-action and git commands in code_actions.py and git_commands.py.

Features add theirs with ``register_command(server, name, handler)`` before the client
initializes (the advertised ``executeCommandProvider`` lists every registered command). A
handler is ``async def handler(ls, arguments: list) -> result``. Note that pygls 2.1 cannot
cancel a running command through ``$/cancelRequest``: long work should take a progress
token or be stoppable with ``agentls.cancel``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agentls.lsp.context import ServerContext
from agentls.lsp.handlers import logged

CommandHandler = Callable[[ServerContext, list[Any]], Awaitable[Any]]


def register_command(server: ServerContext, name: str, handler: CommandHandler) -> None:
    """Make ``name`` a workspace/executeCommand command answered by ``handler``."""
    logged_handler = logged(handler)

    async def execute(*arguments: Any) -> Any:
        return await logged_handler(server, list(arguments))

    execute.__name__ = f"command {name}"
    server.command(name)(execute)
