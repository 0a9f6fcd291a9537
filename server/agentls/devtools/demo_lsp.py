"""The `make demo` part that drives the real language server over stdio, as an editor would.

The model is SCRIPTED (agentls.devtools.replay): the tool calls are replayed, but the
server,
the engine, the edit and the WorkspaceEdit the editor would preview are the real ones.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient
from rich.console import Console
from rich.panel import Panel

from agentls.base.python_child import agentls_argv
from agentls.devtools.replay.command import ReplayServer
from agentls.lsp.services.protocol import plain

SCRIPT = Path(__file__).resolve().parent / "scripts" / "demo_run.yaml"
SAMPLE = {
    "calc.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
    "README.md": "# calc\n",
}

console = Console(highlight=False)


def _capabilities() -> lsp.ClientCapabilities:
    """What VS Code declares for edits: versioned document changes with annotations."""
    return lsp.ClientCapabilities(
        workspace=lsp.WorkspaceClientCapabilities(
            apply_edit=True,
            workspace_edit=lsp.WorkspaceEditClientCapabilities(
                document_changes=True,
                resource_operations=[lsp.ResourceOperationKind.Create,
                                     lsp.ResourceOperationKind.Rename,
                                     lsp.ResourceOperationKind.Delete],
                change_annotation_support=lsp.ChangeAnnotationsSupportOptions(
                    groups_on_label=True),
            ),
        ),
        window=lsp.WindowClientCapabilities(
            show_message=lsp.ShowMessageRequestClientCapabilities()),
    )


async def lsp_section() -> int:
    console.print(Panel.fit(
        "6. [bold]agentls serve[/bold] driven over stdio like an editor. The model is "
        "[bold]SCRIPTED[/bold] "
        f"({SCRIPT.name}); the server, engine and WorkspaceEdit are real. The demo editor "
        "prints the edit it would preview, then declines it, so nothing is written.",
        title="scripted model",
    ))
    with ReplayServer(SCRIPT) as model, tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "calc"
        root.mkdir()
        for name, text in SAMPLE.items():
            (root / name).write_text(text, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLS_", "OPENAI_"))}
        env.update({"XDG_CONFIG_HOME": f"{folder}/config", "XDG_CACHE_HOME": f"{folder}/cache"})

        client = LanguageClient("agentls-demo", "1")
        edits: list[Any] = []

        @client.feature(lsp.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
            edits.append(params)
            return lsp.ApplyWorkspaceEditResult(applied=False,
                                                failure_reason="declined by the demo")

        @client.feature(lsp.WINDOW_LOG_MESSAGE)
        def log_message(params: lsp.LogMessageParams) -> None:
            """The server's log lines, which an editor keeps in an output channel: not shown."""

        @client.feature("agentls/completionStatus")
        def completion_status(params: Any) -> None:
            """The status of completions as you type, for a status bar: not shown here."""

        @client.feature("agentls/chatEvent")
        def chat_event(params: Any) -> None:
            if getattr(params, "kind", None) == "text":
                console.print(params.text, end="", markup=False)

        await client.start_io(*agentls_argv("serve"), env=env, cwd=str(root))
        await client.initialize_async(lsp.InitializeParams(
            capabilities=_capabilities(),
            root_uri=root.as_uri(),
            workspace_folders=[lsp.WorkspaceFolder(uri=root.as_uri(), name="calc")],
            initialization_options={
                "backend": "scripted",
                "backends": {"scripted": {"base_url": model.base_url, "model": "scripted-model",
                                          "api_key_env": None}},
                "cache": {"enabled": False},
            },
        ))
        client.initialized(lsp.InitializedParams())
        console.print("[bold]-> agentls/chat[/bold] {\"prompt\": \"Please fix add in "
                      "calc.py\"}\n[dim]streamed agentls/chatEvent text:[/dim] ", end="")
        result = await client.protocol.send_request_async(
            "agentls/chat", {"prompt": "Please fix add in calc.py"})
        console.print()
        for params in edits:
            console.print(f"\n[bold]<- workspace/applyEdit[/bold] (label {params.label!r}):")
            console.print_json(json.dumps(client.protocol._converter.unstructure(params.edit)))
        console.print("\n[bold]agentls/chat result:[/bold]")
        console.print_json(json.dumps(plain(result)))
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
        unchanged = (root / "calc.py").read_text(encoding="utf-8") == SAMPLE["calc.py"]
        console.print(f"[dim]calc.py unchanged on disk (the edit was declined): {unchanged}[/dim]")
    return 0 if edits else 1
