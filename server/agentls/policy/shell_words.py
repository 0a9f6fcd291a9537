"""Splitting a shell command line into the simple commands it would run (chains, pipes,
``$(…)``, backticks, subshells, ``sh -c '…'``, wrappers such as ``env`` or ``timeout``), each
as words with its redirections, so the permission policy can judge every part. A base module
(no I/O), used by ``permission_policy.py``."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass

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
