"""The code-aware word splitter shared by indexing and queries.

FTS5's ``unicode61`` tokenizer sees ``retryRateLimit`` and ``retry_rate_limit`` as one word
each, so a query for "rate limit" misses both. We index a pre-split copy of every chunk:
identifiers are split at camelCase humps, digits and underscores, lower-cased, and the
whole identifier is kept too (``parsehttpheader`` still matches an exact-name query).
"""

from __future__ import annotations

import re
from functools import lru_cache

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
# "HTTPServerError" -> HTTP, Server, Error; "parse2Json" -> parse, 2, Json
_HUMP = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# Words too common in code to rank anything; keeping them only bloats the index.
_STOP = frozenset({
    "a", "an", "and", "the", "of", "to", "in", "is", "it", "for", "on", "or", "as", "at",
    "by", "be", "if", "else", "then", "this", "that", "with", "from", "self", "def",
    "return", "import", "none", "true", "false",
})
# A question's glue ("where do we ...", "how does it ...") matches every comment and README
# line; left in a query it outranks the one word that names the subject.
_QUESTION = frozenset({
    "where", "what", "which", "who", "when", "why", "how", "do", "does", "did", "done", "we",
    "our", "us", "you", "your", "i", "my", "me", "are", "was", "were", "can", "could",
    "should", "would", "there", "here",
})


_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)")  # one group: re.split keeps the names


def split_identifier(identifier: str) -> list[str]:
    """The lower-cased parts of one identifier (``getHTTPResponse`` -> get, http, response)."""
    parts: list[str] = []
    for piece in identifier.split("_"):
        parts.extend(m.group(0).lower() for m in _HUMP.finditer(piece))
    return parts


def identifiers_as_words(text: str) -> str:
    """``text`` with each identifier written as its words (``totalWithTax`` -> "total with
    tax", ``call_with_backoff`` -> "call with backoff"), everything else kept: a word-piece
    vocabulary cuts ``totalWithTax`` into total, ##with, ##ta, ##x."""
    pieces = _NAME.split(text)  # text, name, text, name, ..., text
    pieces[1::2] = map(_as_words, pieces[1::2])
    return "".join(pieces)


@lru_cache(maxsize=262_144)
def _as_words(name: str) -> str:
    # Cached: a first index writes every chunk this way, and names repeat (11 s of 30 in a
    # profile of 24,000 chunks before).
    return " ".join(split_identifier(name)) or name


@lru_cache(maxsize=262_144)
def _token_words(token: str) -> tuple[str, ...]:
    parts = split_identifier(token)
    joined = token.lower().replace("_", "")
    words = [joined] if len(parts) > 1 and joined not in _STOP else []
    words.extend(p for p in parts if p not in _STOP and len(p) > 1)
    return tuple(words)


def code_words(text: str) -> list[str]:
    """Every searchable word of ``text``: identifier parts plus the joined identifier."""
    words: list[str] = []
    for token in _IDENT.findall(text):
        words.extend(_token_words(token))
    return words


def index_text(text: str) -> str:
    """The pre-split copy FTS5 indexes."""
    return " ".join(code_words(text))


def match_query(query: str) -> str | None:
    """An FTS5 MATCH expression for a free-text query: any of its words (OR), each quoted so
    no user text is read as FTS5 syntax; None when the query has no searchable word."""
    words = list(dict.fromkeys(w for w in code_words(query) if w not in _QUESTION))
    if not words:
        return None
    return " OR ".join(f'"{w}"' for w in words)
