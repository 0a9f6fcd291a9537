"""Prompts for commit messages and pull-request descriptions (seed 002), and the repairs
applied to what the model answers, so the result always has the required shape.

Pure functions: the git facts come in as strings, the model's answer goes out as text.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

from agentls.llm.messages import Message

SUBJECT_LIMIT = 72
BODY_WIDTH = 72
DIFF_LIMIT_CHARS = 60_000  # ~15k tokens: enough for a real commit, small for any backend
COMMIT_TYPES = ("feat", "fix", "docs", "style", "refactor", "perf", "test", "build", "ci",
                "chore", "revert")
PR_SECTIONS = ("Summary", "Changes", "Testing")

COMMIT_SYSTEM = f"""\
You write git commit messages. Based on the git diff the user sends, write one concise
commit message following the Conventional Commits format
(feat/fix/chore/docs/refactor/test/perf/build/ci/style).
Include a brief body if the change is non-trivial.

Rules:
- First line: type(scope): description (max {SUBJECT_LIMIT} characters in total)
- Body: explain WHY, not WHAT (the diff shows WHAT); wrap lines at {BODY_WIDTH} characters
- Use imperative mood
- Be specific about what changed
- Answer with the commit message only: no code fences, no quotes, no commentary."""

PR_SYSTEM = """\
You write pull request descriptions. Based on the branch, its commits and its diff, write
a description in exactly this Markdown format:

## Summary
(1-2 sentences)

## Changes
(bullet list of key changes)

## Testing
(what was tested)

Answer with the description only: no code fences around it, no commentary."""

_CONVENTIONAL = re.compile(
    r"^(?P<type>[A-Za-z]+)(?:\((?P<scope>[^()\n]*)\))?(?P<bang>!)?:\s*(?P<description>.*)$"
)
_LABEL = re.compile(r"^\s*(?:\*\*)?(?:suggested\s+)?commit(?:\s+message)?(?:\*\*)?\s*:\s*",
                    re.IGNORECASE)
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_HEADING = re.compile(r"^#{1,6}\s*(?P<title>.+?)\s*#*\s*$")
_DANGLING = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or",
             "the", "to", "with", "-", "—", "&"}


def truncate_diff(diff: str, limit: int = DIFF_LIMIT_CHARS) -> str:
    """The diff, cut at a line boundary when longer than ``limit`` with a note saying so."""
    if len(diff) <= limit:
        return diff
    cut = diff.rfind("\n", 0, limit) + 1 or limit
    return (f"{diff[:cut]}\n[diff cut here: {len(diff) - cut:,} more characters not shown; "
            "the file summary above lists every changed file]\n")


def commit_message_messages(diff: str, stat: str = "",
                            hidden_files: int = 0) -> list[Message]:
    """The request for a commit message of the staged ``diff`` (``stat``: `git diff --stat`)."""
    parts = []
    if stat.strip():
        parts.append(f"Files:\n{stat.rstrip()}")
    if hidden_files:
        parts.append(f"({hidden_files} staged file(s) are hidden by the workspace settings "
                     "and not shown.)")
    parts.append(f"Diff:\n{truncate_diff(diff).rstrip()}")
    return [Message.system(COMMIT_SYSTEM), Message.user("\n\n".join(parts))]


def pr_description_messages(branch: str, base: str, commits: Sequence[str], diff: str,
                            stat: str = "", hidden_files: int = 0) -> list[Message]:
    """The request for a pull-request description of ``branch`` against ``base``."""
    listed = "\n".join(f"- {c}" for c in commits) or "(no commits)"
    parts = [f"Branch: {branch}", f"Base: {base}", f"Commits:\n{listed}"]
    if stat.strip():
        parts.append(f"Files:\n{stat.rstrip()}")
    if hidden_files:
        parts.append(f"({hidden_files} changed file(s) are hidden by the workspace settings "
                     "and not shown.)")
    parts.append(f"Full diff:\n{truncate_diff(diff).rstrip()}")
    return [Message.system(PR_SYSTEM), Message.user("\n\n".join(parts))]


# --- repairs ------------------------------------------------------------------------------


def guess_commit_type(paths: Sequence[str]) -> str:
    """A type for a subject the model left without one, from the changed paths alone."""
    if not paths:
        return "chore"
    if all(_is_test(p) for p in paths):
        return "test"
    if all(p.lower().endswith((".md", ".rst", ".txt", ".adoc")) or p.startswith("docs/")
           for p in paths):
        return "docs"
    return "chore"


def _is_test(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return (path.startswith(("tests/", "test/")) or "/tests/" in path
            or name.startswith("test_") or re.search(r"[._-](test|spec)\.\w+$", name) is not None)


def repair_commit_message(text: str, paths: Sequence[str] = ()) -> str:
    """A Conventional Commits message whose first line fits in 72 characters.

    Strips what models wrap answers in (code fences, quotes, a "Commit message:" label),
    adds a type when the subject has none (guessed from ``paths``), shortens a long subject
    (drops the scope first, then cuts at a word; the full sentence moves to the body),
    separates subject and body with one blank line and wraps long body lines.
    """
    lines = _unwrap(text).splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return f"{guess_commit_type(paths)}: update {_files_phrase(paths)}"
    subject = _LABEL.sub("", lines[0]).strip().strip("`\"'").strip()
    subject = re.sub(r"^#+\s*", "", subject).rstrip(".").strip()
    body = [line.rstrip() for line in lines[1:]]
    subject, moved = _shorten_subject(_typed(subject, paths))
    if moved:
        body = [moved, "", *body] if any(b.strip() for b in body) else [moved]
    body_text = _wrap_body(body)
    return f"{subject}\n\n{body_text}" if body_text else subject


def _typed(subject: str, paths: Sequence[str]) -> str:
    match = _CONVENTIONAL.match(subject)
    if match and match["type"] in COMMIT_TYPES and match["description"].strip():
        return subject
    if match and match["type"].lower() in COMMIT_TYPES:  # "Fix: x" -> "fix: x"
        head = match["type"].lower() + (f"({match['scope']})" if match["scope"] else "")
        return f"{head}{match['bang'] or ''}: {match['description'].strip() or 'update'}"
    description = subject[:1].lower() + subject[1:] if subject[1:2].islower() else subject
    return f"{guess_commit_type(paths)}: {description or 'update'}"


def _shorten_subject(subject: str) -> tuple[str, str]:
    """(subject within the limit, the full description to keep in the body or "")."""
    if len(subject) <= SUBJECT_LIMIT:
        return subject, ""
    match = _CONVENTIONAL.match(subject)
    assert match is not None  # _typed always gives a typed subject
    description = match["description"].strip()
    head = f"{match['type']}{match['bang'] or ''}: "
    if len(head) + len(description) <= SUBJECT_LIMIT:  # without its scope it fits
        return head + description, ""
    if match["scope"] and len(match["scope"]) <= 20:  # words get cut anyway: keep a scope
        head = f"{match['type']}({match['scope']}){match['bang'] or ''}: "
    room = SUBJECT_LIMIT - len(head)
    words = description[:room + 1].split(" ")
    short = " ".join(words[:-1]) if len(words) > 1 else description[:room]
    trimmed = short.rstrip(" ,;:.")
    while " " in trimmed and trimmed.rsplit(" ", 1)[1].lower() in _DANGLING:
        trimmed = trimmed.rsplit(" ", 1)[0].rstrip(" ,;:.")
    full = description[:1].upper() + description[1:]
    return head + (trimmed or description[:room]), (full if full.endswith(".") else full + ".")


def _wrap_body(lines: list[str]) -> str:
    out: list[str] = []
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        if in_fence or len(line) <= BODY_WIDTH or line.startswith(("    ", "\t")):
            out.append(line)
            continue
        bullet = re.match(r"^(\s*(?:[-*+]|\d+[.)])\s+)", line)
        indent = " " * len(bullet.group(1)) if bullet else ""
        out.extend(textwrap.wrap(line, BODY_WIDTH, subsequent_indent=indent,
                                 break_long_words=False, break_on_hyphens=False) or [""])
    # One blank line between paragraphs, none at either end.
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")
    return text


def _files_phrase(paths: Sequence[str]) -> str:
    if len(paths) == 1:
        return paths[0].rsplit("/", 1)[-1]
    return f"{len(paths)} files" if paths else "files"


def _unwrap(text: str) -> str:
    """The answer without a surrounding code fence or quotes."""
    stripped = text.strip()
    lines = stripped.splitlines()
    if len(lines) >= 2 and _FENCE.match(lines[0]) and _FENCE.match(lines[-1]):
        stripped = "\n".join(lines[1:-1]).strip()
    elif lines and _FENCE.match(lines[0]):  # an opening fence the model never closed
        stripped = "\n".join(lines[1:]).strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "\"'`":
        stripped = stripped[1:-1].strip()
    return stripped


def repair_pr_description(text: str) -> str:
    """The description with its three sections, in order, each present.

    Unwraps a code fence; normalises heading levels of the known sections to ``##``; adds a
    missing section with a placeholder the author will notice and fill in.
    """
    lines = _unwrap(text).splitlines()
    sections: dict[str, list[str]] = {}
    preamble: list[str] = []
    current: list[str] = preamble
    extra: list[str] = []
    for line in lines:
        heading = _HEADING.match(line)
        title = heading["title"].strip().rstrip(":").strip("*").strip() if heading else ""
        known = next((s for s in PR_SECTIONS if title.lower() == s.lower()), None)
        if known is not None:
            current = sections.setdefault(known, [])
        elif heading and sections:
            current = extra  # an unexpected section: keep it, after the known ones
            current.append(line)
        else:
            current.append(line)
    if preamble and any(p.strip() for p in preamble):
        sections.setdefault("Summary", [])[:0] = preamble
    placeholders = {"Summary": "(summary not written)", "Changes": "- (changes not listed)",
                    "Testing": "(not described: say how this was tested)"}
    blocks = []
    for name in PR_SECTIONS:
        content = "\n".join(sections.get(name, [])).strip("\n").strip() or placeholders[name]
        blocks.append(f"## {name}\n{content}")
    if any(e.strip() for e in extra):
        blocks.append("\n".join(extra).strip())
    return "\n\n".join(blocks) + "\n"
