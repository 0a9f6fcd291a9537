"""The permission policy model: which tool calls may run, and how a shell command is judged.

DESIGN.md decision 3. Each tool has a permission (`allow`, `ask`, `deny`). `shell_exec` is
judged part by part: a command line is split into the simple commands it would run
(chains, pipes, `$(…)`, backticks, subshells, `sh -c '…'`), each is parsed into words and
matched against word prefixes. A deny prefix anywhere refuses the whole command; the
command skips asking only when every part matches an allow prefix.

A base module (no tool, no I/O): the settings embed the policy (config.py), the tools layer
applies it (tools/permission_gate.py: asking the person, session grants, refusals), and
tools.permissions re-exports these names. Splitting a command line into its simple commands
is ``shell_words.py``.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentls.policy.shell_words import (
    ShellSyntaxError,
    SimpleCommand,
    split_commands,
)

Permission = Literal["allow", "ask", "deny"]

SHELL_TOOL = "shell_exec"
ALLOW_LIST_REASON = "every part of the command is on the allow list"

DEFAULT_TOOL_PERMISSIONS: dict[str, Permission] = {
    "read_file": "allow",
    "list_files": "allow",
    "search_text": "allow",
    "search_semantic": "allow",
    "git_status": "allow",
    "git_diff": "allow",
    "git_log": "allow",
    # The language servers' answers (tools/code_intel.py): reads.
    "diagnostics": "allow",
    "definition": "allow",
    "references": "allow",
    "workspace_symbols": "allow",
    "hover": "allow",
    # Changes land in the ChangeSet; the editor's preview is the confirmation.
    "write_file": "allow",
    "edit_file": "allow",
    "apply_patch": "allow",
    "delete_file": "allow",
    SHELL_TOOL: "ask",
}

DEFAULT_SHELL_ALLOW: tuple[str, ...] = (
    "git status", "git diff", "git log", "ls", "cat", "rg", "pytest", "npm test",
)

DEFAULT_SHELL_DENY: tuple[str, ...] = (
    "sudo", "su", "doas",
    "rm -rf /", "rm -fr /", "rm -rf /*", "rm -rf ~", "rm -rf ~/", "rm -rf $HOME",
    "rm -rf --no-preserve-root",
    "curl", "wget", "nc", "ncat", "netcat", "telnet", "ssh", "scp", "sftp", "ftp",
    "chmod 777", "chmod -R 777", "chown -R",
    "mkfs", "dd if=", "fdisk", "parted", "wipefs",
    "shutdown", "reboot", "halt", "poweroff", "init 0", "init 6", "kill -9 -1",
    "docker", "kubectl",
    ":(){",
)


class PermissionPolicy(BaseModel):
    """Which tool calls run without asking. Embedded in the settings as `permissions`."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    tools: dict[str, Permission] = Field(
        default_factory=lambda: dict(DEFAULT_TOOL_PERMISSIONS),
        description=(
            "Permission per tool name: allow, ask or deny. Entries given in configuration "
            "are merged over the defaults (reads and changes allow, shell_exec ask)."
        ),
    )
    default: Permission = Field(
        "ask", description="Permission for a tool that `tools` does not name."
    )
    shell_allow: list[str] = Field(
        default_factory=lambda: list(DEFAULT_SHELL_ALLOW),
        description=(
            "Command prefixes, matched on whole words, that run without asking when "
            "every part of the command line matches one. Replaces the default list."
        ),
    )
    shell_deny: list[str] = Field(
        default_factory=lambda: list(DEFAULT_SHELL_DENY),
        description=(
            "Command prefixes, matched on whole words, that are always refused, in any part "
            "of a command line. Deny wins over allow. Replaces the default list."
        ),
    )

    @field_validator("tools", mode="after")
    @classmethod
    def _merge_over_defaults(cls, value: dict[str, Permission]) -> dict[str, Permission]:
        return {**DEFAULT_TOOL_PERMISSIONS, **value}

    def permission_for(self, tool: str) -> Permission:
        return self.tools.get(tool, self.default)

    def decide(self, tool: str, args: Mapping[str, Any]) -> Decision:
        """The policy's answer for one call, before anyone is asked."""
        permission = self.permission_for(tool)
        if tool.startswith("mcp__") and tool.count("__") >= 2:
            server, name = tool[len("mcp__"):].split("__", 1)
            return Decision(permission, f"{name} of MCP server {server} is set to "
                            f"'{permission}' (mcp.servers.{server}.permission or .tools)")
        if tool != SHELL_TOOL:
            return Decision(permission, f"{tool} is set to '{permission}' in the policy")
        return self._decide_shell(str(args.get("command", "")), permission)

    def _decide_shell(self, command: str, permission: Permission) -> Decision:
        deny = [_Prefix.parse(p) for p in self.shell_deny]
        squeezed = "".join(command.split())
        for prefix in deny:
            if prefix.raw is not None and prefix.raw in squeezed:
                return Decision("deny", f"the command contains '{prefix.text}' (deny list)")
        try:
            parts = split_commands(command)
        except ShellSyntaxError as exc:
            if permission == "deny":
                return Decision("deny", f"{SHELL_TOOL} is set to 'deny' in the policy")
            return Decision("ask", f"the command could not be parsed ({exc})")

        for part in parts:
            for prefix in deny:
                if prefix.matches(part.words, loose=True) or prefix.matches(
                    part.raw_words, loose=True
                ):
                    return Decision(
                        "deny", f"'{part.text}' matches '{prefix.text}' on the deny list"
                    )
        if permission != "ask":
            return Decision(permission, f"{SHELL_TOOL} is set to '{permission}' in the policy")

        allow = [_Prefix.parse(p) for p in self.shell_allow]
        unapproved = [part for part in parts if not _is_allowed(part, allow)]
        if not unapproved:
            return Decision("allow", ALLOW_LIST_REASON)
        keys = tuple(dict.fromkeys(grant_key(part) for part in unapproved))
        names = ", ".join(f"'{part.text}'" for part in unapproved)
        return Decision("ask", f"not on the allow list: {names}", grant_keys=keys)


@dataclass(frozen=True)
class Decision:
    permission: Permission
    reason: str
    grant_keys: tuple[str, ...] = ()
    """For an `ask` on shell_exec: the command prefixes "allow for this session" would grant."""
    by_user: bool = False
    """The person answered (as opposed to the policy deciding alone)."""
    note: str = ""
    """For shell_exec: how the command would run ("sandboxed: no network, …"), shown when asking."""


# --- matching command words -------------------------------------------------------------

# Flags that make an allowed command run another program or write a file.
_RISKY_FLAGS = ("--pre", "--output", "--ext-diff", "--exec", "-exec", "--open-files-in-pager")
# Tools whose second word names what they do: "git commit" is granted apart from "git status".
_SUBCOMMAND_TOOLS = frozenset(
    {"git", "npm", "npx", "yarn", "pnpm", "cargo", "go", "pip", "uv", "poetry", "make",
     "docker", "kubectl", "dotnet", "gradle", "mvn", "bundle", "rake", "python", "python3"}
)
_SHELL_OPERATORS = frozenset("(){}|;&`")


@dataclass(frozen=True)
class _Prefix:
    text: str
    words: tuple[str, ...]
    raw: str | None
    """Set when the prefix is shell syntax rather than words (`:(){`): matched as text."""

    @classmethod
    def parse(cls, text: str) -> _Prefix:
        if any(c in _SHELL_OPERATORS for c in text):
            return cls(text, (), "".join(text.split()))
        try:
            words = tuple(shlex.split(text))
        except ValueError:
            words = tuple(text.split())
        return cls(text, words, None)

    def matches(self, words: tuple[str, ...], *, loose: bool = False) -> bool:
        """Whole-word prefix match. ``loose`` also lets `mkfs` match `mkfs.ext4`; a prefix
        word ending in `=` (`dd if=`) matches any word that starts with it."""
        if not self.words or len(words) < len(self.words):
            return False
        for index, (word, expected) in enumerate(zip(words, self.words, strict=False)):
            if word == expected:
                continue
            if expected.endswith("=") and word.startswith(expected):
                continue
            if loose and index == 0 and word.startswith(expected + "."):
                continue
            return False
        return True


def _is_allowed(part: SimpleCommand, allow: list[_Prefix]) -> bool:
    if part.writes_file:
        return False
    if any(w == flag or w.startswith(flag + "=") for w in part.words for flag in _RISKY_FLAGS):
        return False
    return any(prefix.matches(part.words) for prefix in allow)


def grant_key(part: SimpleCommand) -> str:
    words = part.words
    if len(words) > 1 and words[0] in _SUBCOMMAND_TOOLS and not words[1].startswith("-"):
        return f"{words[0]} {words[1]}"
    return words[0]


# --- splitting a command line into simple commands ---------------------------------------


