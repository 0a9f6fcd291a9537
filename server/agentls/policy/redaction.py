"""Secrets out of every output: the one place that turns a credential into ``[REDACTED]``.

Two things count as a secret: the value of every configured backend's ``api_key_env`` (learnt
with ``add_secrets`` whenever a key is read) and anything shaped like a common credential
(``sk-…``, ``ghp_…``/``github_pat_…``, AWS access key ids, ``Bearer …`` tokens). Every outgoing
path calls in here: backend errors, log records (``install_log_filter``), LSP notifications,
CLI output, artifacts, the session store and the response cache. ``StreamRedactor`` covers
text that arrives in pieces, where a key may be split across two deltas.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

MARKER = "[REDACTED]"
MIN_SECRET_LENGTH = 8  # shorter values would redact ordinary words

# Shapes of credentials worth hiding even when nobody configured them.
_SHAPES = re.compile(
    r"sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"
    r"|(?<=Bearer )[A-Za-z0-9\-._~+/]{12,}=*",
)
# The trailing word, where a shape may be starting: StreamRedactor holds back from its start.
_WORD_TAIL = re.compile(r"(?:Bearer\s*)?[A-Za-z0-9_\-._~+/=]*$")
_MAX_HELD = 512
_SHAPE_STARTS = ("sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "ASIA",
                 "Bearer ")
_CREDENTIAL_WORDS = ("key", "token", "secret", "password")

_lock = threading.Lock()
_values: tuple[str, ...] = ()


def add_secrets(values: Iterable[str | None]) -> None:
    """Remember more secret values (process-wide); short or empty ones are ignored."""
    global _values
    with _lock:
        known = set(_values)
        for value in values:
            if value and len(value) >= MIN_SECRET_LENGTH:
                # Also as it reads inside JSON text, where `"`, `\` and controls are escaped.
                known |= {value, json.dumps(value, ensure_ascii=False)[1:-1],
                          json.dumps(value)[1:-1]}
        _values = tuple(sorted(known, key=len, reverse=True))


def known_secrets() -> tuple[str, ...]:
    return _values


def forget_secrets() -> None:
    """Tests only: start from no configured values."""
    global _values
    with _lock:
        _values = ()


def redact(text: str) -> str:
    """``text`` with every known secret and credential shape replaced by the marker."""
    if not text:
        return text
    for value in _values:
        if value in text:
            text = text.replace(value, MARKER)
    return _SHAPES.sub(MARKER, text)


def redact_data(value: Any) -> Any:
    """A copy of a JSON-like value with every string redacted (keys kept)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(item) for item in value]
    return value


def without_credential_keys(value: Any) -> Any:
    """A copy of ``value`` without mapping keys that name a credential (key, token, secret,
    password; any case), at any depth. Numbers and booleans under such keys are kept: they are
    counters like ``prompt_tokens``, never credentials."""
    if isinstance(value, Mapping):
        return {
            k: without_credential_keys(v)
            for k, v in value.items()
            if not (_names_credential(str(k)) and not isinstance(v, bool | int | float))
        }
    if isinstance(value, list | tuple):
        return [without_credential_keys(item) for item in value]
    return value


def _names_credential(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in _CREDENTIAL_WORDS)


class StreamRedactor:
    """Redacts text fed in pieces: the tail that could still grow into a secret is held
    until the next piece (or ``flush``) shows what it is."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece
        keep = _held_tail(text)
        self._held = text[len(text) - keep:] if keep else ""
        return redact(text[: len(text) - keep])

    def flush(self) -> str:
        text, self._held = self._held, ""
        return redact(text)


def _held_tail(text: str) -> int:
    """How many trailing characters might be the start of a secret."""
    longest = 0
    for value in _values:
        for size in range(min(len(value) - 1, len(text)), longest, -1):
            if text.endswith(value[:size]):
                longest = size
                break
    match = _WORD_TAIL.search(text[-_MAX_HELD:])
    word = match.group() if match is not None else ""  # "Bearer " belongs to the shape too
    for start in range(len(word)):
        rest = word[start:]
        if any(rest.startswith(p) or p.startswith(rest) for p in _SHAPE_STARTS):
            longest = max(longest, len(rest))
            break
    return min(longest, _MAX_HELD, len(text))


class RedactingWriter:
    """A text stream that redacts what is written to it (stderr lines, whole messages)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class RedactingFilter(logging.Filter):
    """Redacts a record's message, arguments and traceback before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a bad format string: keep the raw pieces
            message = f"{record.msg} {record.args}"
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


_FILTER = RedactingFilter()


def install_log_filter() -> None:
    """Put the filter on every root handler and on logging's last-resort handler (idempotent).
    Call again after adding a handler."""
    handlers = list(logging.getLogger().handlers)
    if logging.lastResort is not None:
        handlers.append(logging.lastResort)
    for handler in handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)
