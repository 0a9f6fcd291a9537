"""`agentls loop TASK_FILE`: run the agent again and again on one session until it says the
task is done, or a guardrail stops it.

Each iteration is one engine run. Its prompt carries the task, the completion protocol
(``agentls.engine.loop.done_marker``) and what the previous iteration said it did and planned
next. The iterations share one ChangeSet, so each sees the files as the previous ones left
them, and everything is written at the end, all or nothing.

Guardrails: ``--max-iterations`` (loop iterations; each run keeps the configured
``max_iterations`` model turns), ``--timeout`` (the whole loop), ``--no-progress-limit``
(``agentls.engine.loop.stall``), and ``invalid-json`` in json mode.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentls.base.import_gc import imports_without_gc
from agentls.cli.early_start import start_early
from agentls.cli.run_options import add_common_options, positive_int

if TYPE_CHECKING:
    from agentls.cli.headless import Headless
from agentls.engine.loop.done_marker import Completion, CompletionMode, check
from agentls.engine.loop.stall import SIMILARITY_THRESHOLD, ProgressTracker

PREVIOUS_OUTPUT_CHARS = 1_500  # marker mode has no summary: the end of the output stands in

MARKER_PROTOCOL = (
    "When the whole task is complete, end your answer with a line that says exactly DONE "
    "and nothing else. While work remains, do not write DONE: end with what you did and what "
    "is left, and you will be called again."
)
JSON_PROTOCOL = (
    "End every answer with one JSON object, for example:\n"
    '{"status": "continue", "summary": "what you did", "next": "what to do next"}\n'
    'Use "status": "done" when the whole task is complete, "continue" while work remains, '
    'and "error" when it cannot be done (say why in "summary").'
)


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "loop", help="repeat agent runs on one session until the task is done (headless)",
        description="Run the agent on the task in TASK_FILE (or stdin with -) again and "
        "again until it reports the task done, then write the changes atomically.")
    parser.add_argument("task", metavar="TASK_FILE",
                        help="file holding the task, or - to read it from stdin")
    add_common_options(parser)
    parser.add_argument("--completion", choices=["marker", "json"],
                        help="how the agent says it is done: a final DONE line (marker) or a "
                        "JSON status object (json); config: completion_mode")
    parser.add_argument("--max-iterations", type=positive_int, metavar="N",
                        help="most loop iterations (default: config max_iterations)")
    parser.add_argument("--no-progress-limit", type=positive_int, metavar="N",
                        help="stop after N nearly identical outputs in a row that changed no "
                        "file (config: no_progress_limit)")


def run(args: argparse.Namespace, workspace: Path) -> int:
    flags: dict[str, Any] = {}
    if args.completion is not None:
        flags["completion_mode"] = args.completion
    if args.no_progress_limit is not None:
        flags["no_progress_limit"] = args.no_progress_limit
    with imports_without_gc():  # the engine, openai, the settings' models
        start_early(workspace)
        from agentls.cli.headless import Headless

    headless = Headless(args, workspace, command="loop", source=args.task,
                        settings_flags=flags)
    return headless.execute(_loop)


def iteration_prompt(task: str, index: int, limit: int, mode: CompletionMode,
                     previous: Completion | None, previous_text: str) -> str:
    """The prompt of iteration ``index``: where we are, what came before, the task, the
    protocol."""
    parts = [f"[AgentLS loop: iteration {index} of at most {limit}]"]
    if index > 1:
        parts.append("Continue the task below from where the previous iteration stopped.")
        if mode == "json" and previous is not None:
            parts.append(f"Previous iteration's summary:\n{previous.summary or '(none given)'}")
            parts.append(f"Planned next step:\n{previous.next or '(none given)'}")
        else:
            tail = previous_text.strip()[-PREVIOUS_OUTPUT_CHARS:]
            parts.append(f"End of the previous iteration's answer:\n{tail or '(empty)'}")
    parts.append(f"Task:\n{task.strip()}")
    parts.append(MARKER_PROTOCOL if mode == "marker" else JSON_PROTOCOL)
    return "\n\n".join(parts)


async def _loop(headless: Headless) -> None:
    settings = headless.settings
    assert settings is not None
    report = headless.report
    mode: CompletionMode = settings.completion_mode
    limit = headless.args.max_iterations or settings.max_iterations
    timeout_s = settings.timeout_ms / 1000
    deadline = headless.started + timeout_s
    tracker = ProgressTracker(settings.no_progress_limit)
    report.completion_mode = mode
    headless.meta_options.update(loopMaxIterations=limit, completionMode=mode,
                                 noProgressLimit=settings.no_progress_limit)
    previous: Completion | None = None
    previous_text = ""

    for index in range(1, limit + 1):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            report.stop("timeout", f"the loop took longer than {timeout_s:g} s",
                        "raise --timeout (or timeout_ms), or split the task")
            return
        if headless.interrupted:
            return
        headless.renderer.line(f"── iteration {index}/{limit} ──", style="bold")
        prompt = iteration_prompt(headless.prompt, index, limit, mode, previous, previous_text)
        if await headless.run_iteration(prompt, timeout_s=remaining) != "done":
            return
        text = report.text
        completion = check(text, mode)
        report.iterations[-1].completion = completion
        report.completion = completion
        headless.record({"kind": "completion", "mode": mode, **completion.to_dict()})
        said = completion.summary or completion.problem
        headless.renderer.line(f"iteration {index}: {completion.status}"
                               + (f": {said}" if said else ""), style="dim")
        if completion.status == "invalid-json":
            report.stop("invalid-json", f"iteration {index}: {completion.problem}",
                        "the model did not follow the JSON protocol; try --completion marker "
                        "or a model that follows instructions more closely")
            return
        if completion.status == "done":
            report.stop("done")
            return
        if completion.status == "error":
            report.stop("agent-error", "the agent reported that the task cannot be done: "
                        f"{completion.summary or '(no summary)'}",
                        "read the summary, adjust the task and run again")
            return
        if tracker.observe(text, changed=report.iterations[-1].changed):
            report.stop("no-progress", f"{tracker.limit} iterations in a row gave nearly "
                        f"identical answers (similarity ≥ {SIMILARITY_THRESHOLD}) and changed "
                        "no file", "rephrase the task, split it, or check what blocks the agent")
            return
        previous, previous_text = completion, text
    report.stop("max-iterations", f"the task was not done after {limit} iterations",
                "raise --max-iterations, or split the task")
