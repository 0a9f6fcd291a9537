"""`agentls run [PROMPT | PROMPT_FILE | -] [-p PROMPT]`: one prompt, one agent run, its changes
written to disk.

The assistant's text streams to stdout; status, tool activity and retries go to stderr. The
changes are written atomically at the end (all files or none), or only shown with
``--dry-run``. docs/HEADLESS.md lists the options and exit codes.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentls.base.import_gc import imports_without_gc
from agentls.cli.early_start import start_early
from agentls.cli.run_options import add_common_options, positive_int

if TYPE_CHECKING:
    from agentls.cli.headless import Headless

DESCRIPTION = """\
Run the agent once on a prompt. Changes are written atomically at the end;
--dry-run only shows the diff.

Where the prompt comes from:
  -p TEXT, --prompt TEXT   TEXT is the prompt
  -                        read the prompt from stdin
  WORD                     an existing file (current folder, then the workspace) is read;
                           a single word naming no file is an error (a mistyped file name
                           is not sent to the model): use -p WORD to send it
  SEVERAL WORDS            not a file: the words are the prompt ("fix the failing test")
"""


@dataclass(frozen=True)
class PromptSource:
    """Where `agentls run` takes its prompt from: ``file`` (a path or "-") or ``text``."""

    file: str | None = None
    text: str | None = None


class PromptUsageError(ValueError):
    pass


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "run", help="run the agent on a prompt and write its changes (headless, for CI)",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("words", nargs="*", metavar="PROMPT",
                        help="the prompt, a file holding it, or - for stdin (see above)")
    parser.add_argument("-p", "--prompt", dest="prompt_text", metavar="TEXT",
                        help="the prompt itself (never read as a file name)")
    add_common_options(parser)
    parser.add_argument("--max-iterations", type=positive_int, metavar="N",
                        help="most model turns in the run (config: max_iterations)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also show which instruction files (AGENTS.md …) were loaded")


def prompt_source(words: list[str], text: str | None, workspace: Path) -> PromptSource:
    """Decide between prompt text, a prompt file and stdin (rules in DESCRIPTION)."""
    if text is not None:
        if words:
            raise PromptUsageError("give the prompt either with -p or as PROMPT, not both")
        return PromptSource(text=text)
    if not words:
        raise PromptUsageError("no prompt: pass it as text (\"fix the failing test\"), "
                               "with -p TEXT, as a file, or - to read stdin")
    if words == ["-"]:
        return PromptSource(file="-")
    joined = " ".join(words)
    if len(words) == 1 and _is_file(Path(joined), workspace):
        return PromptSource(file=joined)
    if len(words) == 1 and not any(c.isspace() for c in joined):
        return PromptSource(file=joined)  # reported as "not found" with a -p hint
    return PromptSource(text=joined)


def _is_file(path: Path, workspace: Path) -> bool:
    candidates = [path] if path.is_absolute() else [Path.cwd() / path, workspace / path]
    return any(candidate.is_file() for candidate in candidates)


def run(args: argparse.Namespace, workspace: Path) -> int:
    flags: dict[str, Any] = {}
    if args.max_iterations is not None:
        flags["max_iterations"] = args.max_iterations
    problem: str | None = None
    try:
        source = prompt_source(args.words, args.prompt_text, workspace)
    except PromptUsageError as exc:
        source, problem = PromptSource(), str(exc)
    with imports_without_gc():  # the engine, openai, the settings' models
        start_early(workspace)
        from agentls.cli.headless import Headless

    headless = Headless(args, workspace, command="run",
                        source=source.file if source.file is not None else "inline",
                        settings_flags=flags, inline_prompt=source.text, prompt_problem=problem)
    return headless.execute(_run_once)


async def _run_once(headless: Headless) -> None:
    await headless.run_iteration(headless.prompt)
