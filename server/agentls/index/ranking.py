"""Ranking that knows code, applied to the fused candidates of a search.

Each rule was measured on the code-search benchmark (``bench/bench_search.py``; the figures
are in docs/SEMANTIC_SEARCH.md) before it stayed:

- **symbol routing**: a query that is a symbol (``ClientSession``, ``field_validator``,
  ``Sinatra::Base``) puts the chunks that define it first, found by the chunker's symbol
  names even when neither ranking had them;
- **path words**: a file whose name or folder carries the query's words (``routing.py`` for
  "how are routes registered") rises;
- **penalties**: tests, examples, docs and Markdown pages, vendored, generated and
  declaration files, re-export files (``__init__.py``) rank below the sources, unless the
  query asks for them;
- **file aggregation**: one answer per file (its best chunk), the file's score raised a little
  by its other chunks, so a file's several hits count once and leave room for other files;
- **fading on a small index**: where the candidates are most of the index (a repository of a
  few files, where every chunk is a vector candidate), the coherence and the penalties fade
  by ``small_index_fade`` (a penalty p becomes 1 − (1 − p) × fade): there a file's many
  chunks and a page's kind say little about the question (the labelled sets' docs answer).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from agentls.index.words import split_identifier

# A query that names a symbol: qualified (``Sinatra::Base``, ``a.b``), with an underscore
# or an inner capital (``field_validator``, ``getUser``), or capitalised (``Engine``). A
# single lower-case word ("response") reads as a word, not a symbol.
_SYMBOL_QUERY = re.compile(
    r"^(?:[A-Za-z_][A-Za-z0-9_]*(?:(?:::|->|\.|#)[A-Za-z_][A-Za-z0-9_]*)+"
    r"|_[A-Za-z0-9_]*|[A-Za-z][A-Za-z0-9]*[A-Z_][A-Za-z0-9_]*|[A-Z][A-Za-z0-9]*)$")
# Identifiers named inside a sentence ("how ZodType parses", "what safeParse returns").
_EMBEDDED_SYMBOL = re.compile(
    r"\b(?:[A-Z][a-z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*|[a-z][a-z0-9]*[A-Z][A-Za-z0-9]+"
    r"|[a-z][a-z0-9]*_[a-z0-9_]+)\b")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_GLUE = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "has", "have",
    "how", "if", "in", "into", "is", "it", "its", "not", "of", "on", "or", "the", "to", "was",
    "what", "when", "where", "which", "who", "why", "with", "without", "via", "using", "used",
    "use"})

DEFINITION_BOOST = 3.0  # × the best candidate's score, for a chunk defining the queried symbol
STEM_BONUS = 1.5  # the defining chunk's file is named after the symbol
EMBEDDED_SCALE = 0.5  # a symbol inside a sentence may be incidental
PATH_BOOST = 1.0  # × best score × share of query words in the file's name and folder
COHERENCE = 0.5  # × best score × the file's summed score against the best file's

STRONG = 0.3
MODERATE = 0.5
MILD = 0.7
_TEST_FILE = re.compile(
    r"(?:^|/)(?:test_[^/]*|[^/]*_test\.[a-z]+|[^/]*_spec\.[a-z]+|[^/]*\.(?:test|spec)\.[jt]sx?"
    r"|[^/]*Tests?\.(?:java|kt|cs|swift|php|scala)|[^/]*Spec\.(?:kt|swift|scala)|conftest\.py"
    r"|test_helpers?[^/]*)$")
_TEST_DIR = re.compile(r"(?:^|/)(?:tests?|__tests__|spec|specs|testing|testdata)/")
_EXAMPLE_DIR = re.compile(r"(?:^|/)(?:_?examples?|samples?|docs?|docs_src|benchmarks?)/")
_VENDOR_DIR = re.compile(r"(?:^|/)(?:vendor|vendored|third_party|node_modules|single_include"
                         r"|compat|_compat|legacy)/")
_GENERATED = re.compile(r"(?:\.min\.[jc]ss?|_pb2\.py|\.pb\.go|\.generated\.[a-z]+|\.g\.dart)$"
                        r"|(?:^|/)(?:dist|build|gen|generated)/")
_DOCS_FILE = re.compile(r"\.(?:md|mdx|rst|txt|adoc)$", re.IGNORECASE)
_DECLARATIONS = re.compile(r"\.d\.[cm]?ts$")
_REEXPORT = frozenset({"__init__.py", "package-info.java"})
_ASKS_FOR_TESTS = frozenset({"test", "tests", "testing", "tested", "spec", "specs", "fixture",
                             "fixtures", "conftest"})
_ASKS_FOR_DOCS = frozenset({"doc", "docs", "documentation", "readme", "guide", "tutorial",
                            "example", "examples", "changelog"})


@dataclass(frozen=True)
class Candidate:
    chunk_id: int
    path: str
    symbol: str
    score: float


def is_symbol_query(query: str) -> bool:
    return _SYMBOL_QUERY.match(query.strip()) is not None


def symbol_name(query: str) -> str:
    """The last part of a possibly qualified name (``Sinatra::Base`` -> ``Base``)."""
    name = query.strip()
    for separator in ("::", "->", "#", "."):
        name = name.rsplit(separator, 1)[-1]
    return name


def queried_symbols(query: str) -> tuple[set[str], float]:
    """The names the query asks for, and the strength of the definition boost."""
    if is_symbol_query(query):
        return {symbol_name(query)}, 1.0
    return set(_EMBEDDED_SYMBOL.findall(query)), EMBEDDED_SCALE


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.split(".", 1)[0].lower()


def _stem_matches(stem: str, name: str) -> bool:
    bare = stem.replace("_", "").replace("-", "")
    return name in (stem, bare, stem.rstrip("s"), bare.rstrip("s"))


def defines(symbol: str, names: set[str]) -> bool:
    """The chunk's symbol (``Class.method``) is one of ``names``, exactly or as its last part."""
    if not symbol:
        return False
    return symbol in names or symbol.rsplit(".", 1)[-1] in names


def _query_words(query: str) -> set[str]:
    words: set[str] = set()
    for token in _WORD.findall(query):
        for part in [token.lower(), *split_identifier(token)]:
            if len(part) > 2 and part not in _GLUE:
                words.add(part)
    return words


def _path_words(path: str) -> set[str]:
    parts = path.split("/")
    words = set(split_identifier(_stem(parts[-1]).replace("-", "_")))
    if len(parts) > 1:
        words.update(split_identifier(parts[-2].replace("-", "_")))
    return words


def _overlap(keywords: set[str], parts: set[str]) -> int:
    """Query words found among the path's words, a shared prefix of 4+ letters counting
    ("dependency" for ``dependencies``, "routes" for ``routing``)."""
    found = 0
    for word in keywords:
        if word in parts or any(len(p) >= 4 and len(word) >= 4 and
                                (word.startswith(p[:max(4, len(p) - 3)]) or
                                 p.startswith(word[:max(4, len(word) - 3)]))
                                for p in parts):
            found += 1
    return found


def is_test_path(path: str) -> bool:
    return _TEST_FILE.search(path) is not None or _TEST_DIR.search(path.lower()) is not None


def path_penalty(path: str, query_words: set[str]) -> float:
    """How much a file's kind lowers its score (1: source code)."""
    penalty = 1.0
    lower = path.lower()
    if not query_words & _ASKS_FOR_TESTS and is_test_path(path):
        penalty *= STRONG
    if not query_words & _ASKS_FOR_DOCS:
        if _EXAMPLE_DIR.search(lower):
            penalty *= STRONG
        if _DOCS_FILE.search(path):
            penalty *= STRONG
    if _VENDOR_DIR.search(lower) or _GENERATED.search(lower):
        penalty *= STRONG
    if _DECLARATIONS.search(lower):
        penalty *= MILD
    if path.rsplit("/", 1)[-1] in _REEXPORT:
        penalty *= MODERATE
    return penalty


def small_index_fade(candidates: int, index_chunks: int | None) -> float:
    """1 − candidates ÷ the index's chunks (at least 0): 1 on a large index, 0 where every
    chunk is a candidate; 1 when the index's size is not known."""
    if not index_chunks:
        return 1.0
    return max(0.0, 1.0 - candidates / index_chunks)


def rank_files(query: str, candidates: Iterable[Candidate],
               index_chunks: int | None = None) -> list[tuple[list[Candidate], float]]:
    """One (the file's candidates best first, score) per file, best file first.
    ``index_chunks``: the index's size, for ``small_index_fade``."""
    pool = list(candidates)
    if not pool:
        return []
    fade = small_index_fade(len(pool), index_chunks)
    top = max(c.score for c in pool) or 1.0
    names, strength = queried_symbols(query)
    keywords = _query_words(query)
    lowered = {n.lower() for n in names}
    scored: list[tuple[Candidate, float]] = []
    for c in pool:
        score = c.score
        if names and defines(c.symbol, names):
            tier = STEM_BONUS if any(_stem_matches(_stem(c.path), n) for n in lowered) else 1.0
            score += top * DEFINITION_BOOST * strength * tier
        if keywords:
            share = _overlap(keywords, _path_words(c.path)) / len(keywords)
            score += top * PATH_BOOST * share
        penalty = 1 - (1 - path_penalty(c.path, keywords)) * fade
        scored.append((c, score * penalty))
    by_file: dict[str, list[tuple[Candidate, float]]] = {}
    for c, score in scored:
        by_file.setdefault(c.path, []).append((c, score))
    for chunks in by_file.values():
        chunks.sort(key=lambda item: -item[1])
    total = {path: sum(score for _, score in chunks) for path, chunks in by_file.items()}
    most = max(total.values()) or 1.0
    unit = max(chunks[0][1] for chunks in by_file.values()) * COHERENCE * fade
    files = [([c for c, _ in chunks], chunks[0][1] + unit * total[path] / most)
             for path, chunks in by_file.items()]
    return sorted(files, key=lambda item: -item[1])
