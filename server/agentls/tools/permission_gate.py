"""Asking before a tool call runs: the person's approval, session grants, refusals.

The policy itself (which calls are allowed, how a shell command is judged) is
agentls/policy/permissions.py, a base module the settings embed; its names are re-exported
here so ``from agentls.tools.permission_gate import PermissionPolicy`` keeps working.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentls.policy.permissions import (
    ALLOW_LIST_REASON,
    DEFAULT_SHELL_ALLOW,
    DEFAULT_SHELL_DENY,
    DEFAULT_TOOL_PERMISSIONS,
    SHELL_TOOL,
    Decision,
    Permission,
    PermissionPolicy,
    ShellSyntaxError,
    SimpleCommand,
    grant_key,
    split_commands,
)
from agentls.policy.shell_words import ARITHMETIC, SUBSTITUTION
from agentls.tools.output import fail

__all__ = [  # the policy's names, re-exported for callers that import them from here
    "ARITHMETIC",
    "DEFAULT_SHELL_ALLOW",
    "DEFAULT_SHELL_DENY",
    "DEFAULT_TOOL_PERMISSIONS",
    "SHELL_TOOL",
    "SUBSTITUTION",
    "ApprovalAnswer",
    "ApprovalRequest",
    "Confirm",
    "Decision",
    "Permission",
    "PermissionPolicy",
    "SessionGrants",
    "ShellMode",
    "ShellSyntaxError",
    "SimpleCommand",
    "check",
    "rejection",
    "sandbox_decision",
    "split_commands",
]

ApprovalAnswer = Literal["allow_once", "allow_session", "deny"]

ShellState = Literal["sandboxed", "unavailable", "required", "off"]


@dataclass(frozen=True)
class ShellMode:
    """How the next shell command would run (DESIGN.md decision 11), for the policy."""

    state: ShellState
    note: str
    ask: bool = False
    """Sandboxed, but the person wants to be asked anyway (`sandbox.ask`)."""


def sandbox_decision(decision: Decision, mode: ShellMode, command: str) -> Decision:
    """The policy's decision for a shell command, given how it would run. Sandboxed: no
    approval needed (nothing leaves the sandbox but the diff). Unsandboxed in `auto`: every
    command is asked, allow list or not. `required` without a sandbox: refused before anyone
    is asked. The deny list and a tool set to `deny` still refuse."""
    if decision.permission == "deny":
        return decision
    if mode.state == "required":
        return Decision("deny", mode.note.replace("not sandboxed", "no sandbox") +
                        "; sandbox.mode = required refuses it", note=mode.note)
    if mode.state == "sandboxed" and not mode.ask:
        return Decision("allow", mode.note, note=mode.note)
    if mode.state == "sandboxed" or (mode.state == "unavailable"
                                     and decision.reason == ALLOW_LIST_REASON):
        reason = f"{mode.note} (sandbox.ask is on)" if mode.ask else mode.note
        return Decision("ask", reason, decision.grant_keys or _grant_keys(command),
                        note=mode.note)
    return Decision(decision.permission, decision.reason, decision.grant_keys, note=mode.note)


def _grant_keys(command: str) -> tuple[str, ...]:
    try:
        parts = split_commands(command)
    except ShellSyntaxError:
        return ()
    return tuple(dict.fromkeys(grant_key(part) for part in parts))


@dataclass(frozen=True)
class ApprovalRequest:
    """What a front-end shows when a call needs the person's approval."""

    tool: str
    args: Mapping[str, Any]
    reason: str
    title: str
    session_scope: str
    """What "Allow for this session" would allow, in words."""


Confirm = Callable[[ApprovalRequest], Awaitable[ApprovalAnswer]]


@dataclass
class SessionGrants:
    """Approvals given with "allow for this session": per tool, and for the shell per prefix."""

    tools: set[str] = field(default_factory=set)
    shell_prefixes: set[str] = field(default_factory=set)

    def covers(self, tool: str, decision: Decision) -> bool:
        if tool in self.tools:
            return True
        return (
            tool == SHELL_TOOL
            and bool(decision.grant_keys)
            and all(key in self.shell_prefixes for key in decision.grant_keys)
        )

    def grant(self, tool: str, decision: Decision) -> None:
        if tool == SHELL_TOOL and decision.grant_keys:
            self.shell_prefixes.update(decision.grant_keys)
        elif tool != SHELL_TOOL:
            self.tools.add(tool)


async def check(
    policy: PermissionPolicy,
    tool: str,
    args: Mapping[str, Any],
    confirm: Confirm | None,
    *,
    grants: SessionGrants | None = None,
    shell_mode: ShellMode | None = None,
) -> Decision:
    """Decide, asking the person through ``confirm`` when the policy says `ask`.

    ``confirm`` is None in a non-interactive run: then `ask` becomes `deny`. ``shell_mode``
    says how a shell command would run (see ``sandbox_decision``).
    """
    decision = policy.decide(tool, args)
    if tool == SHELL_TOOL and shell_mode is not None:
        decision = sandbox_decision(decision, shell_mode, str(args.get("command", "")))
    if decision.permission != "ask":
        return decision
    if grants is not None and grants.covers(tool, decision):
        return Decision("allow", "allowed earlier for this session")
    if confirm is None:
        return Decision("deny", f"needs approval ({decision.reason}) and no one can be asked")
    answer = await confirm(_request(tool, args, decision))
    if answer == "allow_session":
        if grants is not None:
            grants.grant(tool, decision)
        return Decision("allow", "the person allowed it for this session", by_user=True)
    if answer == "allow_once":
        return Decision("allow", "the person allowed it once", by_user=True)
    return Decision("deny", "the person declined", by_user=True)


def rejection(decision: Decision) -> dict[str, Any]:
    """The tool result the model sees when a call is refused."""
    if decision.by_user:
        message = (
            "The person declined this call. Do not retry it unchanged: try another approach "
            "or ask them what they prefer."
        )
    else:
        message = (
            f"Refused by the permission policy: {decision.reason}. Do not retry it; "
            "find another way or ask the person to run it themselves."
        )
    return fail("USER_REJECTED", message, reason=decision.reason)


def _request(tool: str, args: Mapping[str, Any], decision: Decision) -> ApprovalRequest:
    if tool == SHELL_TOOL:
        title = f"Run `{args.get('command', '')}`?"
        if decision.note and decision.note not in decision.reason:  # said once, not twice
            title += f" ({decision.note})"
        scope = "commands starting with " + ", ".join(f"`{k}`" for k in decision.grant_keys)
    elif tool.startswith("mcp__") and tool.count("__") >= 2:  # which server, which tool
        server, name = tool[len("mcp__"):].split("__", 1)
        shown = ", ".join(f"{k}={v!r}" for k, v in args.items())
        title = f"Run `{name}` of MCP server {server} ({shown})?"
        scope = f"every {name} call of MCP server {server}"
    else:
        title = f"Allow {tool}?"
        scope = f"every {tool} call"
    return ApprovalRequest(
        tool=tool, args=dict(args), reason=decision.reason, title=title, session_scope=scope
    )
