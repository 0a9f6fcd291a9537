"""Helpers for feature handlers: log unexpected failures, answer a refused turn as an error."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pygls.exceptions import JsonRpcException

from agentls.lsp.protocol import REQUEST_FAILED

if TYPE_CHECKING:
    from agentls.lsp.runs import TurnRefused

log = logging.getLogger("agentls.lsp.server")  # the name these records always had


def refused_error(exc: TurnRefused) -> JsonRpcException:
    """A TurnRefused as the LSP error response pygls sends."""
    return JsonRpcException(message=exc.message, code=exc.code or REQUEST_FAILED, data=exc.data)


Handler = TypeVar("Handler", bound=Callable[..., Awaitable[Any]])


def logged(handler: Handler) -> Handler:
    """Log a handler's unexpected failure with its traceback through our own logger (pygls
    logs it under its name, which window/logMessage skips); pygls still answers the request
    with an error response, and the server keeps serving."""

    @functools.wraps(handler)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await handler(*args, **kwargs)
        except JsonRpcException:
            raise  # an answer we chose (bad params, refused): no traceback needed
        except Exception:
            log.exception("%s failed", handler.__name__)
            raise

    return cast(Handler, wrapper)
