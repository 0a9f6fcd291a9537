"""The fence's rules: the deny list and the ignore files, compiled and matched as git does.

A path relative to a root is refused (``DENIED``) when the deny list matches it, or excluded
(``IGNORED``) when a ``.gitignore`` (any in the tree, each relative to its own folder,
negations included) or ``.agentlsignore`` at the root matches it. ``Workspace`` (resolving
paths, the overlay) asks :meth:`FenceRules.refusal` and words the error.

Decisions worth knowing:
- The deny list is matched case-insensitively, even on a case-sensitive filesystem:
  ``.ENV`` or ``.Git/config`` is refused, because on macOS/Windows they *are* the secret,
  and anywhere else a case variant of a secret's name is most likely a secret too.
  Gitignore patterns follow git: case-sensitive, unless the root's filesystem is not.
- ``.agentlsignore`` takes precedence over every ``.gitignore`` (so ``!dist/`` there can
  show the agent a git-ignored folder); the deny list wins over both.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from pathspec import GitIgnoreSpec

DEFAULT_DENY: tuple[str, ...] = (
    ".git/",
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    ".agentls/",
    # A killed apply's temporary and backup files (workspace/changeset.py): never search results.
    ".*.agentls-tmp",
    ".*.agentls-bak",
)

GITIGNORE = ".gitignore"
AGENTLSIGNORE = ".agentlsignore"


@dataclass(frozen=True)
class Refusal:
    code: Literal["DENIED", "IGNORED"]
    source: str  # "the deny list", ".gitignore", "src/.gitignore", ".agentlsignore"
    pattern: str


@dataclass(frozen=True)
class Rules:
    """One compiled ignore file (or the deny list)."""

    spec: GitIgnoreSpec
    source: str
    base: str  # folder the file applies to, relative to the root ("" for the root)
    negates: bool  # any "!" pattern: then every parent folder must be checked on its own


def compile_rules(lines: Sequence[str], source: str, base: str, fold_case: bool) -> Rules | None:
    lines = [ln.lower() if fold_case else ln for ln in lines]
    spec = GitIgnoreSpec.from_lines(lines)
    if not len(spec):
        return None
    negates = any(p.include is False for p in spec.patterns)
    return Rules(spec, source, base, negates)


class IgnoreFiles:
    """Compiled ignore files, one per path, recompiled when the file's stat changes.

    Each lookup stats the file, unless the calling thread is inside ``snapshot()``: there
    each file is stat-ed once, as git reads them once per command (a listing of 20,000
    files otherwise stats ``.agentlsignore`` and every folder's ``.gitignore`` per entry)."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple[int, int, int] | None, Rules | None]] = {}
        self._local = threading.local()  # .checked: files stat-ed in this thread's snapshot

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Within the block, this thread reads each ignore file's stat once (nestable)."""
        if getattr(self._local, "checked", None) is not None:
            yield
            return
        self._local.checked = set()
        try:
            yield
        finally:
            self._local.checked = None

    def rules(self, file: str, source: str, base: str, fold_case: bool) -> Rules | None:
        checked: set[str] | None = getattr(self._local, "checked", None)
        if checked is not None and file in checked:
            return self._cache[file][1]
        rules = self._load(file, source, base, fold_case)
        if checked is not None:
            checked.add(file)
        return rules

    def _load(self, file: str, source: str, base: str, fold_case: bool) -> Rules | None:
        try:
            st = os.stat(file)
        except OSError:
            signature = None
        else:
            # A FIFO or device named .gitignore must not block or be read.
            signature = (
                (st.st_mtime_ns, st.st_size, st.st_ino) if stat.S_ISREG(st.st_mode) else None
            )
        cached = self._cache.get(file)
        if cached is not None and cached[0] == signature:
            return cached[1]
        rules = None
        if signature is not None:
            try:
                with open(file, encoding="utf-8", errors="replace") as handle:
                    lines = handle.read().splitlines()
            except OSError:
                lines = []
            rules = compile_rules(lines, source, base, fold_case)
        self._cache[file] = (signature, rules)
        return rules


class FenceRules:
    """The deny list and the ignore files under the roots, asked one path at a time."""

    def __init__(self, deny: Sequence[str]) -> None:
        # Deny patterns are lower-cased and matched against lower-cased paths.
        self._deny = compile_rules(deny, "the deny list", "", fold_case=True)
        self._ignore_files = IgnoreFiles()

    def snapshot(self) -> contextlib.AbstractContextManager[None]:
        """For a listing: each ignore file is read (stat-ed) once in the block, not per path."""
        return self._ignore_files.snapshot()

    def refusal(self, root: str, fold_case: bool, rel: str, is_dir: bool) -> Refusal | None:
        """Why ``rel`` (posix, relative to ``root``) is refused or ignored; None if it is not."""
        if rel == ".":
            return None
        parts = rel.split("/")
        if self._deny is not None:
            refusal = self._match_deny(rel.lower(), parts, is_dir)
            if refusal is not None:
                return refusal
        return self._match_ignores(root, fold_case, parts, is_dir)

    def _match_deny(self, rel: str, parts: list[str], is_dir: bool) -> Refusal | None:
        rules = self._deny
        assert rules is not None
        if not rules.negates:
            # Without negations a folder pattern also matches everything under it.
            res = rules.spec.check_file(rel + "/" if is_dir else rel)
            if res.include:
                return Refusal("DENIED", rules.source, _pattern(rules, res.index))
            return None
        prefix = ""
        for i, part in enumerate(parts):
            prefix = f"{prefix}/{part}" if prefix else part
            last = i == len(parts) - 1
            res = rules.spec.check_file(prefix.lower() + ("/" if is_dir or not last else ""))
            if res.include:
                return Refusal("DENIED", rules.source, _pattern(rules, res.index))
        return None

    def _match_ignores(self, root: str, fold_case: bool, parts: list[str],
                       is_dir: bool) -> Refusal | None:
        top = self._ignore_files.rules(
            os.path.join(root, AGENTLSIGNORE), AGENTLSIGNORE, "", fold_case
        )
        active: list[Rules] = []
        folder = root
        prefix = ""
        for i, part in enumerate(parts):
            # Git reads a folder's .gitignore only once the folder itself is not ignored.
            source = f"{prefix}/{GITIGNORE}" if prefix else GITIGNORE
            rules = self._ignore_files.rules(
                folder + os.sep + GITIGNORE, source, prefix, fold_case
            )
            if rules is not None:
                active.append(rules)
            prefix = f"{prefix}/{part}" if prefix else part
            last = i == len(parts) - 1
            candidate = prefix + ("/" if is_dir or not last else "")
            if fold_case:
                candidate = candidate.lower()
            verdict = self._decide(top, active, candidate)
            if verdict is not None:
                return verdict
            folder = folder + os.sep + part
        return None

    @staticmethod
    def _decide(top: Rules | None, active: list[Rules], candidate: str) -> Refusal | None:
        for rules in ([top] if top else []) + active[::-1]:
            sub = candidate[len(rules.base) + 1 :] if rules.base else candidate
            res = rules.spec.check_file(sub)
            if res.include is None:
                continue  # this file says nothing; ask the next one up
            if res.include:
                return Refusal("IGNORED", rules.source, _pattern(rules, res.index))
            return None  # negated: re-included at this level
        return None


def _pattern(rules: Rules, index: int | None) -> str:
    if index is None:
        return "?"
    return str(rules.spec.patterns[index].pattern)
