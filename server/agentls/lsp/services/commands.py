"""``workspace/executeCommand``: how features register the contract's commands.

The chat commands (``agentls.chat``, ``agentls.cancel``, ``agentls.newSession``) live in
chat.py, the code-action and git commands in code_actions.py and git_commands.py.

A method with a command form registers both with ``handlers.request(server, method,
command=...)``; a command alone is ``register_command(server, name, handler)`` (defined in
handlers.py, with the error mapping every handler shares), before the client initializes
(the advertised ``executeCommandProvider`` lists every registered command). A command
handler is ``async def handler(ls, arguments: list) -> result``. Note that pygls 2.1 cannot
cancel a running command through ``$/cancelRequest``: long work should take a progress
token or be stoppable with ``agentls.cancel``.
"""

from __future__ import annotations

from agentls.lsp.services.handlers import CommandHandler as CommandHandler
from agentls.lsp.services.handlers import register_command as register_command
