"""An MCP server written with the official SDK for the failure cases of the MCP client tests.

Started by the tests as a person would configure any stdio server (``python faulty_server.py
[MODE]``). MODE picks how it misbehaves at start: ``ok`` (default), ``garbage`` (prints
non-JSON on stdout and never answers), ``hang`` (reads stdin, never answers initialize),
``exit`` (dies at once with a message on stderr), ``bad-schema`` (one tool's schema is not a
valid JSON Schema), ``many`` (120 tools), ``odd-names`` (tool names no model API accepts),
``http PORT`` (streamable HTTP instead of stdio).
Its tools misbehave on request: crash mid-call, 50 MB results, links outside the workspace,
sampling and elicitation requests, network attempts.
"""

from __future__ import annotations

import os
import socket
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ImageContent, ResourceLink, TextContent

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"

if MODE == "garbage":
    sys.stdout.write("this is not JSON-RPC\n{broken\n\x00\x01 binary\n")
    sys.stdout.flush()
    time.sleep(3600)
if MODE == "hang":
    for _line in sys.stdin:
        pass
    time.sleep(3600)
if MODE == "exit":
    sys.stderr.write("faulty_server: cannot open its database (exiting on purpose)\n")
    sys.exit(3)

server = MCPServer("faulty")


@server.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return f"echo: {text}"


@server.tool(description="Exit the server process in the middle of this call.")
def crash() -> str:
    os._exit(7)


@server.tool(description="Return about `mb` megabytes of text.")
def big(mb: int = 50) -> str:
    return "x" * (mb * 1024 * 1024)


@server.tool(description="The value of an environment variable, or '<unset>'.")
def env(variable: str) -> str:
    return os.environ.get(variable, "<unset>")


@server.tool(description="Try to connect to host:port over TCP; says what happened.")
def connect(host: str, port: int) -> str:
    try:
        with socket.create_connection((host, port), timeout=3):
            return "connected"
    except OSError as exc:
        return f"failed: {exc}"


@server.tool(description="Try to write a file; says what happened.")
def write(path: str) -> str:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("written by the MCP server\n")
        return "written"
    except OSError as exc:
        return f"failed: {exc}"


@server.tool(description="Read a file; says what happened.")
def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        return f"failed: {exc}"


@server.tool(description="Add a tool named `name` and tell the client the list changed.")
async def grow(name: str, ctx: Context) -> str:
    server.add_tool(lambda value: f"{name}: {value}", name=name, description="A new tool.")
    await ctx.request_context.session.send_tool_list_changed()  # a 2025-11-25 session
    return "added"


@server.tool(description="Sleep for `seconds`, then answer.")
def sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"


@server.tool(description="A resource link to a path.")
def link(path: str) -> list[ResourceLink | TextContent]:
    return [TextContent(type="text", text=f"see {path}"),
            ResourceLink(type="resource_link", uri=f"file://{path}", name=os.path.basename(path))]


@server.tool(description="A 1x1 PNG image.")
def image() -> list[ImageContent]:
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJ"
           "RU5ErkJggg==")
    return [ImageContent(type="image", data=png, mime_type="image/png")]


@server.tool(description="Ask the client's model to write something (sampling).")
async def sample(ctx: Context) -> str:
    from mcp.types import SamplingMessage
    result = await ctx.request_context.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text="hi"))],
        max_tokens=10)
    return f"sampled: {result}"


@server.tool(description="Ask the person a question (elicitation).")
async def ask(ctx: Context) -> str:
    from pydantic import BaseModel

    class Answer(BaseModel):
        name: str

    result = await ctx.elicit("What is your name?", Answer)
    return f"elicited: {result}"


if MODE == "many":
    for index in range(120):
        def make(i: int):
            def tool(value: str) -> str:
                return f"tool {i}: {value}"
            return tool
        topic = ["weather", "billing", "calendar", "invoices", "kubernetes", "database"][index % 6]
        server.add_tool(make(index), name=f"{topic}_action_{index}",
                        description=f"Do action {index} about {topic}.")

if MODE == "odd-names":
    server.add_tool(lambda value: value, name="get.weather/now",
                    description="A tool name with dots and a slash.")
    server.add_tool(lambda value: value, name="x" * 80, description="A very long name.")

if MODE == "bad-schema":
    server.tool(name="broken", description="A tool whose schema is broken.")(
        lambda value: value)
    tool = server._tool_manager._tools["broken"]
    tool.parameters = {"type": "object", "properties": {"value": {"type": "strnig"}}}

@server.resource("notes://team/readme", name="team readme", description="Team notes.")
def team_readme() -> str:
    return "Deploys happen on Tuesdays."


@server.resource("file:///etc/hostname", name="hostname")
def hostname() -> str:
    return "a file outside the workspace"


@server.tool(description="The value of an HTTP header of this request, or '<none>'.")
def header(name: str, ctx: Context) -> str:
    return (ctx.headers or {}).get(name.lower(), "<none>")


if __name__ == "__main__":
    if MODE == "http":  # streamable HTTP on the port given after the mode
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
