"""One MCP server's life, through the official SDK: start, initialize, list, call, restart, stop.

The SDK's transports and ``ClientSession`` are context managers bound to the task that enters
them, so each connection has one holder task that enters them, answers ``ready`` and waits
to be told to stop; tool calls from any run go through the session it holds. A server that
dies is restarted once (on the next call); a second death leaves it ``failed``, with its
stderr's last lines in the error, until the settings change or the engine ends. One that
did not start is tried again on the first use a minute later (installed meanwhile, say).

Sampling and elicitation are refused with a clear error (the client offers neither); a server
that prints what is not JSON-RPC has those lines counted and quoted if it never answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO, cast

from agentls.policy.redaction import add_secrets, redact
from agentls.sandbox.launched_server import Launch, LaunchError
from agentls.settings.mcp import McpServerConfig

log = logging.getLogger(__name__)

State = Literal["stopped", "starting", "running", "failed"]
MAX_RESTARTS = 1
START_RETRY_S = 60.0
"""A server that failed to start is started again on the first use after this long."""
_STDERR_TAIL = 800


class McpServerError(Exception):
    """The server could not do what was asked; the message is written for the model and the
    person (what failed, what to do)."""


@dataclass
class ServerTool:
    """A tool as the server listed it."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass
class ServerResource:
    """A resource as the server listed it (``resources/list``, first page)."""

    uri: str
    name: str
    description: str


@dataclass
class Refusals:
    """Requests from the server the client turned down, for the person (``agentls mcp``)."""

    sampling: int = 0
    elicitation: int = 0
    garbage_lines: list[str] = field(default_factory=list)


class McpConnection:
    """One configured server; ``start`` is idempotent and safe to call from several runs."""

    def __init__(self, name: str, config: McpServerConfig,
                 launch: Callable[[], Launch] | None) -> None:
        self.name = name
        self.config = config
        self._make_launch = launch  # None: a streamable-HTTP server (config.url)
        self.state: State = "stopped"
        self.error: str | None = None
        self.tools: list[ServerTool] = []
        self.resources: list[ServerResource] = []
        self.note = "remote (streamable HTTP)" if launch is None else ""
        self.restarts = 0
        self.refusals = Refusals()
        self._start_failed_at: float | None = None  # when it last failed to start
        self._tools_stale = False
        self.start_seconds: float | None = None
        self._session: Any = None
        self._holder: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._stderr: TextIO | None = None
        self._launch: Launch | None = None

    # -- start and stop ------------------------------------------------------------------

    async def start(self) -> None:
        """Running when it returns; ``McpServerError`` otherwise (state ``failed``)."""
        async with self._lock:
            if self.state == "running" and self._alive():
                return
            if self.state == "failed":
                # A server that did not start (not installed yet, a typo in its env) is tried
                # again a while later; one that crashed twice stays failed.
                since = time.monotonic() - (self._start_failed_at or 0.0)
                if self._start_failed_at is None or since < START_RETRY_S:
                    raise McpServerError(self.error or f"MCP server {self.name!r} failed")
                self._start_failed_at = None
            if self.state == "running":  # it died since the last call
                await self._halt()
                if not self._may_restart("exited"):
                    raise McpServerError(self.error or "")
            await self._start()

    async def _start(self) -> None:
        self.state = "starting"
        began = time.perf_counter()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        try:
            self._launch = self._make_launch() if self._make_launch is not None else None
        except LaunchError as exc:
            self._fail(f"MCP server {self.name!r} cannot start: {exc}")
            self._start_failed_at = time.monotonic()
            raise McpServerError(self.error or "") from exc
        if self._launch is not None:
            self.note = self._launch.note
            if self._stderr is not None:
                self._stderr.close()
            self._stderr = cast(TextIO, tempfile.TemporaryFile(  # noqa: SIM115 - closed in aclose
                mode="w+", encoding="utf-8", errors="replace"))
        self._holder = asyncio.create_task(self._hold(ready, self._stop),
                                           name=f"agentls-mcp-{self.name}")
        try:
            async with asyncio.timeout(self.config.startup_timeout_s):
                await asyncio.shield(ready)
        except TimeoutError:
            await self._halt()
            self._fail(self._start_failure(
                f"did not answer initialize within {self.config.startup_timeout_s:g} s "
                f"(mcp.servers.{self.name}.startup_timeout_s)"))
            self._start_failed_at = time.monotonic()
            raise McpServerError(self.error or "") from None
        except Exception as exc:
            await self._halt()
            self._fail(self._start_failure(_describe(exc)))
            self._start_failed_at = time.monotonic()
            raise McpServerError(self.error or "") from exc
        self.start_seconds = time.perf_counter() - began
        self.state = "running"
        self.error = None

    async def _hold(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        try:
            from mcp.client.session import ClientSession

            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(
                    read, write,
                    sampling_callback=self._refuse_sampling,
                    elicitation_callback=self._refuse_elicitation,
                    message_handler=self._on_message,
                    read_timeout_seconds=None,
                ))
                await session.initialize()
                self.tools = await _list_tools(session)
                self.resources = await _list_resources(session)
                self._session = session
                if not ready.done():
                    ready.set_result(None)
                await stop.wait()
        except asyncio.CancelledError:
            ready.cancel()  # a start given up on (timed out): nobody waits for it
            raise
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(exc))
            else:
                log.info("MCP server %s ended: %s", self.name, _describe(exc))
        finally:
            self._session = None

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        if self._launch is None:
            return _http_streams(self.config.url or "", http_headers(self.name, self.config))
        from mcp.client.stdio import StdioServerParameters, stdio_client

        launch = self._launch
        params = StdioServerParameters(command=launch.command, args=launch.args, env=launch.env,
                                       cwd=launch.cwd, encoding_error_handler="replace")
        assert self._stderr is not None
        return stdio_client(params, errlog=self._stderr)

    def _alive(self) -> bool:
        return self._holder is not None and not self._holder.done() and self._session is not None

    async def _halt(self) -> None:
        """Stop the holder task (the SDK closes stdin, then ends the process tree)."""
        holder, self._holder = self._holder, None
        if self._stop is not None:
            self._stop.set()
        if holder is not None and not holder.done():
            try:
                async with asyncio.timeout(8):
                    await asyncio.shield(holder)
            except TimeoutError:
                holder.cancel()
                with contextlib.suppress(BaseException):
                    await holder
            except BaseException:
                pass
        self._session = None
        if self._launch is not None:
            self._launch.remove_files()
        if self.state in ("running", "starting"):
            self.state = "stopped"

    async def aclose(self) -> None:
        async with self._lock:
            await self._halt()
            if self.state != "failed":
                self.state = "stopped"
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None

    # -- calls ---------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The server's ``CallToolResult``; ``McpServerError`` when the server failed."""
        return await self._request(tool, lambda session: session.call_tool(tool, arguments))

    async def read(self, uri: str) -> Any:
        """The server's ``ReadResourceResult`` for ``uri``."""
        return await self._request(f"reading {uri}", lambda session: session.read_resource(uri))

    async def _request(self, tool: str, send: Callable[[Any], Any]) -> Any:
        await self.start()
        session = self._session
        if session is None:
            raise McpServerError(f"MCP server {self.name!r} is not running")
        try:
            async with asyncio.timeout(self.config.timeout_s):
                return await send(session)
        except TimeoutError:
            raise McpServerError(
                f"{tool} on MCP server {self.name!r} did not answer within "
                f"{self.config.timeout_s:g} s (mcp.servers.{self.name}.timeout_s)") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if self._alive() and not _is_connection_loss(exc):
                raise McpServerError(f"MCP server {self.name!r} answered {tool} with an "
                                     f"error: {_describe(exc)}") from exc
            await self._after_crash()
            raise McpServerError(self.error or "") from exc

    async def _after_crash(self) -> None:
        async with self._lock:
            await self._halt()
            self._may_restart("crashed during the call")
            if self.state != "failed":
                self.error = (f"MCP server {self.name!r} crashed during the call"
                              f"{self._stderr_tail()}; it will be restarted on the next call "
                              "(once). Call again only if the call is safe to repeat.")

    def _may_restart(self, what: str) -> bool:
        if self.restarts >= MAX_RESTARTS:
            self._fail(f"MCP server {self.name!r} {what} again after a restart"
                       f"{self._stderr_tail()}; it is not started again in this session. "
                       f"Fix the server, then start a new session (or run `agentls mcp`).")
            return False
        self.restarts += 1
        self.state = "stopped"
        return True

    # -- what the server asks of the client -----------------------------------------------

    async def _refuse_sampling(self, context: Any, params: Any) -> Any:
        from mcp import types

        self.refusals.sampling += 1
        return types.ErrorData(code=types.INVALID_REQUEST, message=(
            "AgentLS does not offer sampling to MCP servers: the model is only called by the "
            "agent itself. Return your result without asking the client's model."))

    async def _refuse_elicitation(self, context: Any, params: Any) -> Any:
        from mcp import types

        self.refusals.elicitation += 1
        return types.ErrorData(code=types.INVALID_REQUEST, message=(
            "AgentLS does not offer elicitation to MCP servers: take what you need as tool "
            "arguments (the agent asks the person when it must)."))

    async def refresh_tools(self) -> None:
        """List the tools again when the server said they changed (``list_changed``)."""
        session = self._session
        if not self._tools_stale or session is None:
            return
        self._tools_stale = False
        try:
            async with asyncio.timeout(self.config.startup_timeout_s):
                self.tools = await _list_tools(session)
        except Exception as exc:  # the old list stays; the next call says what is wrong
            log.info("MCP server %s: listing its changed tools failed: %s", self.name,
                     _describe(exc))

    async def _on_message(self, message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self._tools_stale = True  # listed again before the next run (not from here:
            return  # this handler runs in the SDK's reader, which the answer needs)
        if isinstance(message, Exception) and len(self.refusals.garbage_lines) < 5:
            errors = getattr(message, "errors", None)
            line = str(message)
            with contextlib.suppress(Exception):
                line = str(errors()[0]["input"]) if callable(errors) else line
            self.refusals.garbage_lines.append(redact(line)[:200])

    # -- errors --------------------------------------------------------------------------

    def _fail(self, message: str) -> None:
        self.state = "failed"
        self.error = redact(message)

    def _start_failure(self, cause: str) -> str:
        text = f"MCP server {self.name!r} did not start: {cause}"
        if self.refusals.garbage_lines:
            text += (f"; it printed what is not MCP on stdout (first: "
                     f"{self.refusals.garbage_lines[0]!r}): a stdio server must write only "
                     "JSON-RPC to stdout (logs go to stderr)")
        text += self._stderr_tail()
        return text + f". Check mcp.servers.{self.name} (command, args, env)."

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            text = self._stderr.read()[-_STDERR_TAIL:].strip()
        except (OSError, ValueError):
            return ""
        return f"; its stderr ends with: {redact(text)!r}" if text else ""


async def _list_tools(session: Any) -> list[ServerTool]:
    tools: list[ServerTool] = []
    cursor: str | None = None
    from mcp import types

    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        for tool in page.tools:
            tools.append(ServerTool(tool.name, tool.description or "",
                                    dict(tool.input_schema or {})))
        cursor = page.next_cursor
        if not cursor or len(tools) > 5_000:
            return tools


def http_headers(name: str, config: McpServerConfig) -> dict[str, str]:
    """``headers`` plus ``headers_env``'s values (learnt as secrets: never logged)."""
    headers = dict(config.headers)
    for header, variable in config.headers_env.items():
        value = os.environ.get(variable)
        if not value:
            raise McpServerError(f"mcp.servers.{name}.headers_env names {variable} for the "
                                 f"{header} header, and {variable} is not set: set it, or "
                                 "remove that header")
        add_secrets([value])
        headers[header] = value
    return headers


async def _list_resources(session: Any) -> list[ServerResource]:
    capabilities = session.server_capabilities
    if capabilities is None or capabilities.resources is None:
        return []
    try:
        page = await session.list_resources()
    except Exception as exc:  # a server that says it has resources and fails to list them
        log.info("MCP resources/list failed: %s", _describe(exc))
        return []
    return [ServerResource(str(r.uri), r.name or "", r.description or "")
            for r in page.resources[:50]]


@contextlib.asynccontextmanager
async def _http_streams(url: str, headers: dict[str, str]) -> Any:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers) as client, streamable_http_client(
            url, http_client=client) as streams:
        yield streams[0], streams[1]


def _is_connection_loss(exc: BaseException) -> bool:
    import anyio

    if isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError,
                        anyio.EndOfStream, ConnectionError, EOFError)):
        return True
    text = str(exc).lower()
    return "connection closed" in text or ("closed" in text and "stream" in text)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    text = str(exc) or type(exc).__name__
    if isinstance(exc, FileNotFoundError):
        return f"the program was not found ({text})"
    return redact(text)
