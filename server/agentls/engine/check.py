"""The loop checks its own work: after the model's last edit of a turn, the changed files'
diagnostics from the project's language servers (DESIGN.md decision 16).

New problems (errors, or errors and warnings: ``agent.check``) go back to the model as a note,
at most ``agent.check_turns`` times a run; the last check is the turn's closing summary ("no
new problems", or the list), shown to the person as a ``check`` tool call in every front door
and kept on the run's result (the CLI's ``--json`` ``check`` field). A server that fails or
is slow never blocks: the summary says the check could not run, and why.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentls.engine.events import Frontend, ToolCallStarted, ToolResultEvent
from agentls.settings.models import AgentConfig
from agentls.workspace.fence import Workspace

if TYPE_CHECKING:
    from agentls.langservers.results import Problem
    from agentls.langservers.servers import LangServers

log = logging.getLogger(__name__)

CHECK_TOOL = "check"  # the name its events carry (ACP: a `think` tool call)
SHOWN = 30
TOLD = 3  # problems named in the one-line summary an editor shows


@dataclass
class CheckResult:
    """One check: what it found new, and what it could not do."""

    status: str  # "clean" | "problems" | "failed" | "skipped"
    summary: str
    files: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)  # problem lines (tools/code_intel.py)
    failures: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "summary": self.summary, "files": self.files,
                "new_problems": self.new, "failures": self.failures}

    def told(self) -> str:
        """One line for an editor's transcript (a tool result's summary): the summary and
        the first problems."""
        if not self.new:
            return self.summary
        listed = "; ".join(self.new[:TOLD])
        more = f"; … and {len(self.new) - TOLD} more" if len(self.new) > TOLD else ""
        return f"{self.summary}: {listed}{more}"

    def for_model(self) -> str:
        lines = "\n".join(f"- {line}" for line in self.new[:SHOWN])
        more = f"\n- … and {len(self.new) - SHOWN} more" if len(self.new) > SHOWN else ""
        return ("[AgentLS check] The language servers report new problems in the files you "
                f"changed:\n{lines}{more}\nFix them (your fixes join the same change), or "
                "say briefly why they are fine.")


class CheckState:
    """Per run: how many extra turns the check may still ask for, and what it last saw."""

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self.turns_left = config.check_turns
        self.last: CheckResult | None = None
        self._checked_texts: dict[str, str | None] | None = None

    def due(self, servers: LangServers | None, ws: Workspace) -> bool:
        """Whether the run's changes are worth a check now (something changed since the last
        one, and a server covers the workspace)."""
        if self.config.check == "off" or servers is None:
            return False
        texts = {str(c.path): c.text for c in ws.changeset.changes()}
        return bool(texts) and texts != self._checked_texts

    async def run(self, servers: LangServers, ws: Workspace, frontend: Frontend) -> CheckResult:
        from agentls.tools.code_intel import changed_files

        self._checked_texts = {str(c.path): c.text for c in ws.changeset.changes()}
        call_id = f"check-{uuid.uuid4().hex[:8]}"
        paths = changed_files(ws)
        shown = [ws.display_path(p) for p in paths]
        frontend.on_event(ToolCallStarted(call_id=call_id, name=CHECK_TOOL,
                                          arguments=_arguments(shown)))
        result = await check(servers, ws, self.config)
        self.last = result
        frontend.on_event(ToolResultEvent(
            call_id=call_id, name=CHECK_TOOL, ok=result.status in ("clean", "problems"),
            summary=result.told(), output=_output(result)))
        return result


async def check(servers: LangServers, ws: Workspace, config: AgentConfig) -> CheckResult:
    # The code-intel tools' module (its parameter models) waits for the first check: every
    # run makes a CheckState, few reach a check.
    from agentls.tools.code_intel import changed_files, problem_line, summary_words

    paths = changed_files(ws)
    shown = [ws.display_path(p) for p in paths]
    served = [p for p in paths if any(s.serves(p) for s in servers.specs(ws))]
    if not served:
        return CheckResult("skipped", "no language server covers the changed files", shown)
    try:
        async with asyncio.timeout(config.check_timeout_s):
            answer = await servers.diagnostics(ws, served, timeout=config.check_timeout_s)
    except TimeoutError:
        return CheckResult("failed", f"the check could not run: the language servers took "
                           f"longer than {config.check_timeout_s:g} s (agent.check_timeout_s)",
                           shown)
    except Exception as exc:  # a bug must not end the turn: say it, log it
        log.exception("the check of the changed files failed")
        return CheckResult("failed", f"the check could not run: {exc}", shown)
    wanted = ("error",) if config.check == "errors" else ("error", "warning")
    new: list[Problem] = [p for f in answer.files for p in f.problems
                          if p.new and p.severity in wanted]
    lines = [problem_line(p) for p in new]
    answered = [f for f in answer.files if f.servers]
    if not answered and answer.failures:
        why = "; ".join(f"{k}: {v}" for k, v in answer.failures.items())
        return CheckResult("failed", f"the check could not run: {why}", shown,
                           failures=dict(answer.failures))
    kind = "errors" if config.check == "errors" else "problems"
    if new:
        summary = f"{len(new)} new {kind if len(new) != 1 else kind[:-1]} in the changed files"
    else:
        summary = f"no new {kind} ({summary_words(answer.files)})"
    if answer.failures:
        summary += "; not checked by " + ", ".join(
            f"{k} ({v})" for k, v in answer.failures.items())
    return CheckResult("problems" if new else "clean", summary, shown, lines,
                       dict(answer.failures))


def _arguments(paths: list[str]) -> str:
    import json

    return json.dumps({"files": paths})


def _output(result: CheckResult) -> str:
    lines = [result.summary, *result.new[:SHOWN]]
    if len(result.new) > SHOWN:
        lines.append(f"… and {len(result.new) - SHOWN} more")
    return "\n".join(lines)
