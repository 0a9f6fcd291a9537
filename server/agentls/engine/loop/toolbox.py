"""The tools a run offers the model: the built-in ones and the MCP servers' (under the mode's
and the request's limits), held by the run's workspace, permissions and the session's
sandbox, and the specs the model is shown (``ask_user`` always, ``update_plan`` where the
front-end draws a plan). Called once per run by ``Agent._loop``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentls.engine import modes
from agentls.engine.events import Frontend, StatusEvent
from agentls.engine.loop.plan import UPDATE_PLAN_SPEC
from agentls.engine.loop.tool_dispatch import ASK_USER_SPEC, confirm_with
from agentls.engine.loop.turns import RunState, SessionState
from agentls.engine.mcp_tools import mcp_tools_for_run, wanted
from agentls.engine.run_request import RunRequest
from agentls.llm.messages import ToolSpec
from agentls.tools.permission_gate import PermissionPolicy
from agentls.tools.registry import DEFAULT_TOOLS, ToolBox, ToolContext, ToolDef
from agentls.tools.shell.sandboxed import ShellSandbox

if TYPE_CHECKING:
    from agentls.index.from_settings import IndexHub
    from agentls.langservers.servers import LangServers
    from agentls.settings.config import Settings
    from agentls.tools.mcp.hub import McpHub
    from agentls.workspace.fence import Workspace


@dataclass
class RunTools:
    toolbox: ToolBox
    specs: list[ToolSpec]  # what the model is offered, in order
    automation: bool  # nobody answers questions (a CI run, a non-interactive front-end)


async def run_tools_for(
    *, settings: Settings, policy: PermissionPolicy | None, mcp_started: McpHub | None,
    mcp: Callable[[], McpHub], search_hub: IndexHub, code_intel: LangServers | None,
    run: RunState, request: RunRequest, frontend: Frontend, workspace: Workspace,
    state: SessionState,
) -> RunTools:
    """``policy``: the engine's own (None: the settings' ``permissions``); ``mcp_started``:
    the hub if one exists, ``mcp()`` makes it (only a run that wants MCP tools does);
    ``code_intel``: the project's language servers, when one covers the workspace."""
    automation = run.session.mode == "automation" or not frontend.interactive
    # A front-end the person approved in advance (`--yes`) answers without asking anyone,
    # so automation runs honour it too; questions (ask_user) still go unanswered.
    approves = not automation or bool(getattr(frontend, "preapproved", False))
    if state.sandbox is None or state.sandbox.settings != settings.sandbox:
        state.sandbox = ShellSandbox(settings.sandbox, run.session.id)
    state.sandbox.notify = lambda text: frontend.on_event(
        StatusEvent(message=text, warning=True))
    state.sandbox.runner = getattr(frontend, "command_runner", None)
    policy = policy or settings.permissions
    mcp_defs: list[ToolDef] = []
    if request.tools is None and wanted(settings, mcp_started, run.session.id):
        mcp_defs, policy = await mcp_tools_for_run(
            settings, mcp(), workspace, request.prompt, run.session.id, policy, frontend)
    toolbox = ToolBox(
        ToolContext(
            workspace,
            policy=policy,
            grants=state.grants,
            confirm=confirm_with(frontend) if approves else None,
            api_key_env=settings.active_backend.api_key_env or "OPENAI_API_KEY",
            tool_timeout_s=settings.tool_timeout_s,
            sandbox=state.sandbox,
            search_index=lambda: search_hub.get(workspace),
            code_intel=code_intel,
        ),
        [*DEFAULT_TOOLS, *mcp_defs],
        only=modes.allowed_tools(modes.of_session(run.session), request.tools),
    )
    specs = [ToolSpec(s.name, s.description, s.parameters) for s in toolbox.schemas()]
    specs.append(ASK_USER_SPEC)
    if getattr(frontend, "shows_plan", False):  # the front-end shows a checklist (ACP)
        specs.append(UPDATE_PLAN_SPEC)
    return RunTools(toolbox, specs, automation)
