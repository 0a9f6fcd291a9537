"""Offering the person to redo a change that did not land (a stale document): the feature
that made the change decides what "again" means (a chat turn, a code action) and passes it
in; delivery only says that the change is retryable (``Delivery.retryable``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

if TYPE_CHECKING:
    from agentls.lsp.services.server_context import ServerContext

RETRY = "Retry on the current text"


def offer_retry(ls: ServerContext, message: str,
                retry: Callable[[], Awaitable[object]] | None) -> None:
    """Tell the person (showMessage), and with ``retry`` ask whether to redo it on the
    current text; the question waits in the background, the run does not."""
    if retry is None:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                     message=message))
        return

    async def ask() -> None:
        answer = await ls.window_show_message_request_async(lsp.ShowMessageRequestParams(
            type=lsp.MessageType.Warning, message=message,
            actions=[lsp.MessageActionItem(title=RETRY), lsp.MessageActionItem(title="Dismiss")]))
        if answer is not None and answer.title == RETRY:
            await retry()

    ls.spawn(ask())
