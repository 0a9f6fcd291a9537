"""Approvals and the model's questions, asked through ``window/showMessageRequest``.

A tool call with permission ``ask`` offers *Allow once*, *Allow for this session* and
*Deny*; the model's ``ask_user`` offers its own options. A client that did not declare
``window.showMessage`` cannot be asked: approvals are denied and questions go unanswered,
and the person is told why in the chat.

The request is awaited through ``asyncio.shield``: if the run is cancelled while the prompt
is open, the client's late answer still lands on a live future instead of a cancelled one.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

if TYPE_CHECKING:
    from agentls.lsp.services.server_context import ServerContext
    from agentls.tools.permission_gate import ApprovalAnswer, ApprovalRequest

log = logging.getLogger(__name__)

_CODE_SPAN = re.compile(r"`([^`\n]+)`")

ALLOW_ONCE = "Allow once"
ALLOW_SESSION = "Allow for this session"
DENY = "Deny"

Explain = Callable[[str], None]  # tells the person something in the chat


def can_ask(ls: ServerContext) -> bool:
    window = ls.client_capabilities.window
    return window is not None and window.show_message is not None


async def confirm(ls: ServerContext, request: ApprovalRequest,
                  explain: Explain) -> ApprovalAnswer:
    if not can_ask(ls):
        explain(f"{request.title} needs your approval, but this editor cannot show approval "
                "prompts (it does not declare window.showMessage), so it was denied. Allow "
                f"{request.tool} in the permissions settings to let it run.")
        return "deny"
    # A message box shows plain text: `code` spans become quotes.
    message = plain_text(f"AgentLS: {request.title}\n{_sentence(request.reason)}\n"
                         f"“{ALLOW_SESSION}” allows {request.session_scope}.")
    answer = await _ask(ls, lsp.MessageType.Warning, message, [ALLOW_ONCE, ALLOW_SESSION, DENY])
    if answer == ALLOW_ONCE:
        return "allow_once"
    if answer == ALLOW_SESSION:
        return "allow_session"
    return "deny"


def plain_text(text: str) -> str:
    """Markdown code spans as quoted text, for message boxes that show no markdown."""
    return _CODE_SPAN.sub(lambda m: f"“{m.group(1)}”", text)


def _sentence(text: str) -> str:
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


async def ask(ls: ServerContext, question: str, options: Sequence[str],
              explain: Explain) -> str | None:
    if not can_ask(ls):
        explain(f"The agent asked “{question}” but this editor cannot show questions (it does "
                "not declare window.showMessage); the agent decides on its own.")
        return None
    answer = await _ask(ls, lsp.MessageType.Info, f"AgentLS asks: {question}", list(options))
    return answer if answer in options else None


async def _ask(ls: ServerContext, kind: lsp.MessageType, message: str,
               actions: list[str]) -> str | None:
    pending = ls.window_show_message_request_async(lsp.ShowMessageRequestParams(
        type=kind, message=message, actions=[lsp.MessageActionItem(title=a) for a in actions]))
    try:
        chosen = await asyncio.shield(pending)
    except Exception as exc:  # the client failed to show it: nobody said yes
        log.warning("window/showMessageRequest failed: %s", exc)
        return None
    return chosen.title if chosen is not None else None
