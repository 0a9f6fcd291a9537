"""The `agentls` command: parses arguments and hands each subcommand to its module.

Heavy modules (openai, diskcache, the LSP server) are imported inside the subcommand that
needs them, so `agentls config get` and editor start-up stay fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from agentls import __version__
from agentls.base.import_gc import imports_without_gc
from agentls.cli import exitcodes
from agentls.policy import redaction


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse exits 2 on bad usage; 2 means "no usable backend" here, so use 64.
        self.print_usage(sys.stderr)
        # The top parser reports leftovers of every command: point at the command's help.
        command = "agentls COMMAND" if self.prog == "agentls" else self.prog
        self.exit(exitcodes.USAGE, f"{self.prog}: error: {message}\n"
                  f"See `{command} --help` for the options.\n")


COMPLETION_SHELLS = ("bash", "zsh", "fish")


class _PrintCompletion(argparse.Action):
    """`agentls --completion SHELL`: print the shell's completion script (generated from this
    parser by shtab, imported only here) and exit."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        import shtab

        # Every command's own options too: the lazy parser only names the module commands.
        whole = build_parser(everything=True)
        try:
            print(shtab.complete(whole, shell=str(values)), flush=True)
        except BrokenPipeError:  # `agentls --completion bash | head`
            sys.stderr.close()
        parser.exit(0)


def build_parser(only: str | None = None, *, everything: bool = False) -> argparse.ArgumentParser:
    """The parser with the module commands only named, or with ``only`` the one module command
    that will run fully built (so `agentls serve` does not import what `agentls run` needs:
    editor start-up is measured), or with ``everything`` all of them built (completion)."""
    parser = _Parser(prog="agentls", description="An LLM coding agent for your editor and CI.")
    parser.add_argument("--version", action="version", version=f"agentls {__version__}")
    parser.add_argument(
        "--completion", action=_PrintCompletion, choices=COMPLETION_SHELLS, metavar="SHELL",
        help="print the completion script for bash, zsh or fish (see docs/HEADLESS.md)",
    )
    parser.add_argument(
        "-C", "--cwd", type=Path, default=None,
        help="workspace folder (default: the current directory)",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    config = commands.add_parser("config", help="read and change settings")
    config_cmds = config.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    config_cmds.required = True
    get = config_cmds.add_parser("get", help="print the effective value of KEY")
    get.add_argument("key")
    set_ = config_cmds.add_parser("set", help="validate VALUE and store it for KEY")
    set_.add_argument("key")
    set_.add_argument("value")
    set_.add_argument("--workspace", action="store_true",
                      help="store in the workspace's .agentls/config.toml instead of the user file")
    listing = config_cmds.add_parser("list", help="every key, its value and where it comes from")
    listing.add_argument("--json", action="store_true", help="print one JSON object")
    config_cmds.add_parser("path", help="print where the config files are")
    reset = config_cmds.add_parser("reset", help="set the config file aside; defaults apply")
    reset.add_argument("--workspace", action="store_true", help="reset the workspace file")

    cache = commands.add_parser("cache", help="inspect or clear the response cache")
    cache_cmds = cache.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    cache_cmds.required = True
    stats = cache_cmds.add_parser("stats", help="entries, size on disk and hits")
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    cache_cmds.add_parser("clear", help="remove every cached response")

    ask = commands.add_parser("ask", help="send one prompt to the model and stream the answer "
                              "(no tools, no edits)")
    ask.add_argument("prompt", help="the prompt, or - to read it from stdin")
    ask.add_argument("--backend", help="backend name (see `agentls config list`)")
    ask.add_argument("--model", help="model name for this request")
    ask.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    ask.add_argument("--system", help="a system prompt")

    replay = commands.add_parser(
        "replay", help="run the scripted model server (for tests and demos; not a real model)"
    )
    replay.add_argument("--script", required=True, type=Path, help="YAML or JSON script file")
    replay.add_argument("--port", type=int, default=8765)
    replay.add_argument("--host", default="127.0.0.1")

    import importlib

    for name, module_name in COMMAND_MODULES.items():
        if everything or only == name:
            importlib.import_module(module_name).add_parser(commands)
        elif only is None:
            # Only named in `agentls --help`: importing the module (the engine, openai) just
            # to list it would make `--help` and `--version` wait for all of it.
            commands.add_parser(name, help=COMMAND_HELP[name])
    return parser


# Subcommands implemented in their own modules: each has ``add_parser(commands)`` (argparse
# only, so building the parser stays cheap) and ``run(args, workspace) -> int``.
COMMAND_MODULES: dict[str, str] = {
    "backends": "agentls.cli.backends_cmd",
    "run": "agentls.cli.run",
    "loop": "agentls.cli.loop",
    "sessions": "agentls.cli.sessions_cmd",
    "serve": "agentls.cli.serve_cmd",
    "index": "agentls.cli.index_cmd",
    "search": "agentls.cli.search_cmd",
    "trust": "agentls.cli.trust_cmd",
    "acp": "agentls.cli.acp_cmd",
    "mcp": "agentls.cli.mcp_cmd",
}
# Their one-line help in `agentls --help`, the same words as their own parser's `help=`
# (a test keeps the two equal).
COMMAND_HELP: dict[str, str] = {
    "backends": "which backends are usable here: model servers and agent CLIs",
    "run": "run the agent on a prompt and write its changes (headless, for CI)",
    "loop": "repeat agent runs on one session until the task is done (headless)",
    "sessions": "list this workspace's sessions, or show one",
    "serve": "run the language server for an editor (stdio by default)",
    "index": "build or refresh the search index used by `agentls search` and the agent's "
             "search_semantic",
    "search": "find code by meaning in the workspace",
    "trust": "trust this project's .agentls/config.toml (its backend URL, sandbox and "
             "permissions)",
    "acp": "run the agent over the Agent Client Protocol (stdio), for Zed, JetBrains, Emacs "
           "and Neovim ACP clients",
    "mcp": "list the configured MCP servers, their state and tool counts",
}


def _command_module(name: str) -> str | None:
    return COMMAND_MODULES.get(name)


def _requested_command(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line, if it is a module command."""
    words = iter(argv)
    for word in words:
        if word in ("-C", "--cwd"):
            next(words, None)
        elif not word.startswith("-"):
            return word if word in COMMAND_MODULES else None
    return None


def _command(name: str) -> Callable[[argparse.Namespace, Path], int]:
    """The function that runs the subcommand ``name``, its module imported."""
    module_name = _command_module(name)
    if module_name is not None:
        import importlib

        run: Callable[[argparse.Namespace, Path], int] = importlib.import_module(module_name).run
        return run
    if name == "config":
        from agentls.cli.config_cmd import run_config

        return run_config
    if name == "cache":
        from agentls.cli.cache_cmd import run_cache

        return run_cache
    if name == "ask":
        from agentls.cli.ask import run_ask

        return run_ask
    if name == "replay":
        from agentls.devtools.replay.command import main as replay_main

        return lambda args, _: replay_main(
            ["--script", str(args.script), "--port", str(args.port), "--host", args.host])
    raise AssertionError(f"unhandled command {name!r}")


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(_requested_command(arguments)).parse_args(arguments)
    workspace = (args.cwd or Path.cwd()).resolve()
    redaction.install_log_filter()
    try:
        with imports_without_gc():  # each command's modules (pydantic models, the engine)
            command = _command(args.command)
        return command(args, workspace)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return exitcodes.INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`agentls config list | head`): not an error worth a traceback.
        sys.stderr.close()
        return exitcodes.OK
