"""The one place where a feature's handler meets JSON-RPC: project errors become error
responses, unexpected failures are logged, and a request and its command form are registered
together.

- ``answers_errors(handler)``: ``ParamsError`` (bad params) becomes InvalidParams,
  ``TurnRefused`` (no workspace, unknown session, queue full ...) its code, message and data;
  anything else is logged with its traceback through our logger (pygls logs it under its own
  name, which window/logMessage skips) and pygls answers it as an internal error.
- ``request(server, method, command=...)``: registers ``async def handler(ls, params)`` as
  the method and, given ``command``, as the ``workspace/executeCommand`` command that takes
  the method's params as its one argument (or, with ``command_params``, its arguments
  another way): one handler, one error mapping, both forms.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from agentls.lsp.services.protocol import REQUEST_FAILED, ParamsError
from agentls.lsp.services.turn import TurnRefused

if TYPE_CHECKING:
    from agentls.lsp.services.server_context import ServerContext

log = logging.getLogger("agentls.lsp.server")  # the name these records always had

Handler = TypeVar("Handler", bound=Callable[..., Awaitable[Any]])
RequestHandler = Callable[["ServerContext", Any], Awaitable[Any]]
CommandHandler = Callable[["ServerContext", list[Any]], Awaitable[Any]]


def refused_error(exc: TurnRefused) -> JsonRpcException:
    """A TurnRefused as the LSP error response pygls sends."""
    return JsonRpcException(message=exc.message, code=exc.code or REQUEST_FAILED, data=exc.data)


def answers_errors(handler: Handler) -> Handler:
    """``handler`` with the project's errors answered as JSON-RPC errors, and any other
    failure logged (the server keeps serving)."""

    @functools.wraps(handler)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await handler(*args, **kwargs)
        except ParamsError as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        except TurnRefused as exc:
            raise refused_error(exc) from None
        except JsonRpcException:
            raise  # an answer we chose: no traceback needed
        except Exception:
            log.exception("%s failed", handler.__name__)
            raise

    return cast(Handler, wrapper)


logged = answers_errors  # the older name


def single_argument(command: str, method: str) -> Callable[[list[Any]], Any]:
    """A command's arguments as the method's params: exactly one, the params."""

    def params(arguments: list[Any]) -> Any:
        if len(arguments) != 1:
            raise ParamsError(f"{command} takes one argument, the {method} params, not "
                              f"{len(arguments)}")
        return arguments[0]

    return params


def request(server: ServerContext, method: str, *, command: str | None = None,
            command_params: Callable[[list[Any]], Any] | None = None,
            options: Any = None) -> Callable[[RequestHandler], RequestHandler]:
    """Register ``handler(ls, params)`` as ``method`` and, given ``command``, as that
    ``workspace/executeCommand`` command (see the module's docstring)."""
    def register(handler: RequestHandler) -> RequestHandler:
        answering = answers_errors(handler)
        server.feature(method, options)(answering)
        if command is not None:
            to_params = command_params or single_argument(command, method)

            async def as_command(ls: ServerContext, arguments: list[Any]) -> Any:
                return await handler(ls, to_params(arguments))

            as_command.__name__ = f"{handler.__name__} (command {command})"
            register_command(server, command, as_command)
        return handler

    return register


def register_command(server: ServerContext, name: str, handler: CommandHandler) -> None:
    """Make ``name`` a workspace/executeCommand command answered by ``handler(ls, arguments)``
    (a command with no method form; lsp/services/commands.py says more)."""
    answering = answers_errors(handler)

    async def execute(*arguments: Any) -> Any:
        return await answering(server, list(arguments))

    execute.__name__ = f"command {name}"
    server.command(name)(execute)
