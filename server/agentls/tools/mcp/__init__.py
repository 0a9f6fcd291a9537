"""Tools from Model Context Protocol servers (DESIGN.md decision 14), through the official SDK.

- ``launch.py``: how a stdio server is started: inside the sandbox (bubblewrap, the command
  sandbox's own argv and environment) or, when configured, directly.
- ``connection.py``: one server's life: start, initialize, list tools, call, restart once
  after a crash, stop.
- ``convert.py``: names (``mcp__NAME__tool``), schemas trimmed and checked, results turned
  into tool results (fenced, capped, redacted).
- ``hub.py``: every configured server of one engine, and the ToolDefs a run offers.

Importing this package does not import the SDK: ``connection.py`` does, on the first start.
"""
