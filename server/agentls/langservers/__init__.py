"""The project's own language servers as the agent's eyes (DESIGN.md decision 16).

Each server runs headless inside the command sandbox (no network, no key, the workspace
read-only), is told the agent's pending text through ``didOpen`` / ``didChange``, and answers
diagnostics, definitions, references, symbols and hovers for the model's tools
(``agentls.tools.code_intel``) and the loop's check of its own work. ``known`` (one small class
per known server), ``specs`` (settings and detection -> what to start), ``server_launch`` (the
sandboxed command line), ``client`` (pygls's language client and what the server sends),
``running_server`` (one server's life: start, documents, requests, restart, stop),
``servers`` (which servers cover a workspace, for the engine; no LSP client imported),
``fleet`` (one running server per name and workspace, loaded on the first question),
``results`` (what the tools read).
See docs/LANGUAGE_SERVERS.md.
"""
