"""The permission policy model: which tool calls may run, and how a shell command is judged.

DESIGN.md decision 3. Each tool has a permission (`allow`, `ask`, `deny`). `shell_exec` is
judged part by part: a command line is split into the simple commands it would run
(chains, pipes, `$(…)`, backticks, subshells, `sh -c '…'`), each is parsed into words and
matched against word prefixes. A deny prefix anywhere refuses the whole command; the
command skips asking only when every part matches an allow prefix.

A base module (no tool, no I/O): the settings embed the policy (config.py), the tools layer
applies it (tools/permissions.py: asking the person, session grants, refusals), and
tools.permissions re-exports these names. A little over 400 lines: the shell-command
splitter (the second half) is its own job and can become ``shell_words.py`` next.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

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

    model_config = ConfigDict(extra="forbid")

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
# Not a shell parser: enough of quotes, separators and substitutions to judge a command part
# by part. Anything it cannot read raises ShellSyntaxError so the caller asks instead.

ARITHMETIC = "__arithmetic__"
"""Stands in for a `$((…))` arithmetic expansion, which runs no command."""
SUBSTITUTION = "__substitution__"
"""Stands in for a `$(…)` or backtick substitution; the inner command is judged apart."""

_SEPARATORS = frozenset(";|&\n()")
_KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "case", "esac",
     "!", "{", "}", "time"}
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Commands that run the rest of their words as another command.
_WRAPPERS = frozenset(
    {"env", "nohup", "nice", "ionice", "timeout", "command", "builtin", "exec", "xargs",
     "stdbuf", "setsid", "time", "watch", "unbuffer"}
)
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
_DURATION = re.compile(r"^\d+(\.\d+)?[smhd]?$")
_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", "<", "<<", "<<<", "<&", "<>"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", "<>"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


class ShellSyntaxError(ValueError):
    """The command line has unbalanced quotes, parentheses or backticks."""


@dataclass(frozen=True)
class SimpleCommand:
    """One command of a chain, as words."""

    text: str
    words: tuple[str, ...]
    """Without leading keywords, variable assignments and wrappers (`env X=1`, `timeout 5`);
    the first word reduced to its basename (`/bin/rm` → `rm`)."""
    raw_words: tuple[str, ...]
    """Without leading keywords and assignments, wrappers kept."""
    writes_file: bool
    """Has an output redirection to a file (not `/dev/null`, not `2>&1`)."""


def split_commands(command: str) -> list[SimpleCommand]:
    """Every simple command in ``command``, including those inside `$(…)`, backticks,
    `<(…)`, subshells, `sh -c '…'` and `eval`. Raises ``ShellSyntaxError`` when unreadable."""
    result: list[SimpleCommand] = []
    pending = [command]
    while pending:
        texts: list[str] = []
        _split_into(pending.pop(0), texts)
        for text in texts:
            simple = _to_simple_command(text)
            if simple is not None:
                result.append(simple)
                pending.extend(_nested_scripts(simple.words))
    return result


def _split_into(text: str, parts: list[str]) -> None:
    """Append the chain parts of ``text`` to ``parts``; substitutions are split recursively."""
    buf: list[str] = []
    quote = ""
    i, n = 0, len(text)

    def flush() -> None:
        part = "".join(buf).strip()
        if part:
            parts.append(part)
        buf.clear()

    while i < n:
        c = text[i]
        if quote == "'":
            buf.append(c)
            quote = "" if c == "'" else quote
            i += 1
        elif c == "\\":
            if not text.startswith("\\\n", i):  # a line continuation disappears
                buf.append(text[i : i + 2])
            i += 2
        elif c == "`":
            inner, i = _take_backticks(text, i + 1)
            _split_into(inner, parts)
            buf.append(SUBSTITUTION)
        elif text.startswith("$((", i):  # arithmetic, not a command; `$(…)` inside still are
            inner, i = _take_parens(text, i + 2)
            _split_substitutions(inner, parts)
            buf.append(ARITHMETIC)
        elif text.startswith("$(", i) or (not quote and text.startswith(("<(", ">("), i)):
            inner, i = _take_parens(text, i + 2)
            _split_into(inner, parts)
            buf.append(SUBSTITUTION)
        elif quote == '"':
            buf.append(c)
            quote = "" if c == '"' else quote
            i += 1
        elif c in "'\"":
            quote = c
            buf.append(c)
            i += 1
        elif c == "#" and (not buf or buf[-1].isspace()):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif c in _SEPARATORS and not _is_redirect_ampersand(text, i):
            flush()
            i += 1
        else:
            buf.append(c)
            i += 1
    if quote:
        raise ShellSyntaxError(f"unbalanced {quote} quote")
    flush()


def _split_substitutions(arithmetic: str, parts: list[str]) -> None:
    """The commands of the `$(…)` and backticks inside an arithmetic expansion."""
    i = 0
    while i < len(arithmetic):
        if arithmetic.startswith("$((", i):
            inner, i = _take_parens(arithmetic, i + 2)
            _split_substitutions(inner, parts)
        elif arithmetic.startswith("$(", i):
            inner, i = _take_parens(arithmetic, i + 2)
            _split_into(inner, parts)
        elif arithmetic[i] == "`":
            inner, i = _take_backticks(arithmetic, i + 1)
            _split_into(inner, parts)
        else:
            i += 1


def _is_redirect_ampersand(text: str, i: int) -> bool:
    """`&` in `2>&1`, `>&2`, `<&0` or `&>file` is a redirection, not a separator."""
    return text[i] == "&" and ((i > 0 and text[i - 1] in "<>") or text.startswith("&>", i))


def _take_parens(text: str, start: int) -> tuple[str, int]:
    """The text up to the `)` closing an opening just before ``start``, and the index after."""
    depth = 1
    quote = ""
    i = start
    while i < len(text):
        c = text[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            i += 1
        elif quote == '"':
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return text[start:i], i + 1
        i += 1
    raise ShellSyntaxError("unclosed '$(' or '('")


def _take_backticks(text: str, start: int) -> tuple[str, int]:
    i = start
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == "`":
            return text[start:i].replace("\\`", "`"), i + 1
        else:
            i += 1
    raise ShellSyntaxError("unclosed backtick")


def _to_simple_command(text: str) -> SimpleCommand | None:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise ShellSyntaxError(str(exc)) from exc

    words: list[str] = []
    writes_file = False
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token not in _REDIRECTS:
            # A file descriptor number before a redirection (`2>`) is not an argument.
            if not (token.isdigit() and i + 1 < len(tokens) and tokens[i + 1] in _REDIRECTS):
                words.append(token)
            i += 1
            continue
        target = tokens[i + 1] if i + 1 < len(tokens) else ""
        is_fd_copy = token == ">&" and (target.isdigit() or target == "-")
        if token in _WRITE_REDIRECTS and not is_fd_copy and target not in _HARMLESS_TARGETS:
            writes_file = True
        i += 2

    while words and (words[0] in _KEYWORDS or _ASSIGNMENT.match(words[0])):
        words.pop(0)
    if not words:
        return None
    raw = (os.path.basename(words[0]) or words[0], *words[1:])
    return SimpleCommand(text=text, words=_unwrap(raw), raw_words=raw, writes_file=writes_file)


def _unwrap(words: tuple[str, ...]) -> tuple[str, ...]:
    """Drop wrappers (`env X=1`, `timeout 5`, `nohup`, `xargs -0` …) to reach the command."""
    rest = list(words)
    while len(rest) > 1 and os.path.basename(rest[0]) in _WRAPPERS:
        wrapper = os.path.basename(rest.pop(0))
        while len(rest) > 1 and (
            rest[0].startswith("-")
            or _ASSIGNMENT.match(rest[0])
            or (wrapper == "timeout" and _DURATION.match(rest[0]))
        ):
            rest.pop(0)
    return (os.path.basename(rest[0]) or rest[0], *rest[1:])


def _nested_scripts(words: tuple[str, ...]) -> list[str]:
    """Scripts run by `bash -c '…'` or `eval …`, judged like the outer command."""
    if words[0] == "eval":
        return [" ".join(words[1:])]
    if words[0] in _SHELLS:
        for index, word in enumerate(words[1:-1], start=1):
            if word.startswith("-") and not word.startswith("--") and "c" in word:
                return [words[index + 1]]
    return []
