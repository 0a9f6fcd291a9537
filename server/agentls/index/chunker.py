"""Cut a file into search chunks that follow its structure.

Code in a language tree-sitter knows (``tree-sitter-language-pack``) is cut at functions,
methods and classes: each whole when it fits ``MAX_LINES``, a class too big to fit gives its
header and then its methods (symbol ``Class.method``), a function too big to fit gives line
windows that keep its symbol. What lies between definitions (imports, module code) and files
in other languages (docs, config) become line windows with overlap.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

log = logging.getLogger(__name__)

MAX_LINES = 80  # a definition longer than this is split
WINDOW_LINES = 40
WINDOW_OVERLAP = 10

LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript",
    ".cjs": "javascript", ".jsx": "javascript", ".ts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java", ".c": "c", ".h": "c", ".cc": "cpp",
    ".cpp": "cpp", ".hpp": "cpp", ".cxx": "cpp", ".rb": "ruby", ".cs": "csharp",
    ".kt": "kotlin", ".swift": "swift", ".php": "php", ".scala": "scala", ".lua": "lua",
    ".sh": "bash",
}

# Node types that are a named definition worth a chunk of its own.
DEFINITIONS = frozenset({
    "function_definition", "class_definition", "decorated_definition",  # python
    "function_declaration", "class_declaration", "method_definition",  # js / ts
    "generator_function_declaration", "interface_declaration", "enum_declaration",
    "type_alias_declaration", "abstract_class_declaration",
    "method_declaration", "type_declaration", "constructor_declaration",  # go / java
    "function_item", "impl_item", "struct_item", "enum_item", "trait_item", "mod_item",  # rust
    "class_specifier", "struct_specifier",  # c / c++
    "method", "singleton_method", "class", "module",  # ruby
    "object_declaration", "protocol_declaration",  # kotlin / swift
    "macro_definition",  # rust macro_rules!
})
# Definitions whose body holds further definitions worth their own chunks.
CONTAINERS = frozenset({
    "class_definition", "class_declaration", "abstract_class_declaration", "impl_item",
    "trait_item", "mod_item", "class", "module", "class_specifier", "struct_specifier",
    "interface_declaration", "object_declaration", "declaration_list", "class_body",
    "block", "body_statement", "field_declaration_list", "export_statement",
    "template_declaration", "namespace_definition",  # c++: the inner class is the definition
})
# JavaScript / TypeScript functions made by assignment: ``Foo.prototype.bar = function``,
# ``app.use = function use``, ``const parse = (text) => ...``.
_FUNCTION_VALUES = frozenset({"function_expression", "function", "arrow_function",
                              "generator_function", "class", "class_expression"})
_ASSIGNMENTS = frozenset({"expression_statement", "lexical_declaration",
                          "variable_declaration"})


@dataclass(frozen=True)
class Chunk:
    start_line: int  # 1-based, inclusive
    end_line: int  # inclusive
    symbol: str  # "" outside any definition
    text: str


def language_of(path: str) -> str | None:
    return LANGUAGES.get(os.path.splitext(path)[1].lower())


@cache
def _parser(language: str) -> Any | None:
    try:
        from tree_sitter_language_pack import get_parser

        return get_parser(language)  # type: ignore[arg-type]
    except Exception as exc:  # a grammar missing from this build: fall back to windows
        log.warning("no tree-sitter grammar for %s (%s); using line windows", language, exc)
        return None


def chunk_file(path: str, text: str) -> list[Chunk]:
    """The chunks of one file's text."""
    lines = text.splitlines()
    if not lines:
        return []
    language = language_of(path)
    parser = _parser(language) if language else None
    if parser is None:
        return list(_windows(lines, 1, len(lines), ""))
    try:
        tree = parser.parse(text.encode("utf-8"))
    except Exception as exc:  # a parser crash on odd input must not stop indexing
        log.warning("tree-sitter could not parse %s (%s); using line windows", path, exc)
        return list(_windows(lines, 1, len(lines), ""))
    spans: list[tuple[int, int, str]] = []
    _collect(tree.root_node, "", spans)
    return _assemble(lines, spans)


def _name(node: Any) -> str:
    name = node.child_by_field_name("name")
    if name is None and node.type == "decorated_definition":
        inner = node.child_by_field_name("definition")
        return _name(inner) if inner is not None else ""
    if name is None and node.type in ("impl_item",):
        name = node.child_by_field_name("type")
    if name is None and node.type == "type_declaration":
        spec = next((c for c in node.named_children if c.type == "type_spec"), None)
        name = spec.child_by_field_name("name") if spec is not None else None
    if name is None and node.type == "function_definition":  # c / c++: in the declarator
        name = _declarator_name(node.child_by_field_name("declarator"))
    if name is None:  # grammars without a name field (kotlin): the first identifier child
        name = next((c for c in node.named_children if c.type in _NAME_NODES), None)
    if name is None:
        return ""
    return str(name.text.decode("utf-8", "replace"))


_NAME_NODES = frozenset({"identifier", "type_identifier", "simple_identifier", "constant"})


def _declarator_name(node: Any) -> Any | None:
    """The identifier a C / C++ declarator declares (``int *Foo::bar(int)`` -> ``bar``)."""
    while node is not None:
        if node.type in ("identifier", "field_identifier", "operator_name",
                         "destructor_name"):
            return node
        if node.type == "qualified_identifier":
            node = node.child_by_field_name("name")
            continue
        node = node.child_by_field_name("declarator")
    return None


def _assigned_function(node: Any) -> str | None:
    """The name a JavaScript / TypeScript statement gives a function or class it assigns
    (``Foo.prototype.bar = function`` -> ``Foo.bar``), else None."""
    if node.type == "expression_statement":
        expr = node.named_children[0] if node.named_children else None
        if expr is None or expr.type != "assignment_expression":
            return None
        value, target = expr.child_by_field_name("right"), expr.child_by_field_name("left")
    else:
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        if len(declarators) != 1:
            return None
        value = declarators[0].child_by_field_name("value")
        target = declarators[0].child_by_field_name("name")
    if value is None or target is None or value.type not in _FUNCTION_VALUES:
        return None
    name = target.text.decode("utf-8", "replace").replace(".prototype.", ".")
    return name if name.replace(".", "").replace("$", "").replace("_", "").isalnum() else None


def _collect(node: Any, prefix: str, spans: list[tuple[int, int, str]]) -> None:
    """Add (start, end, symbol) of every definition chunk under ``node`` (1-based lines)."""
    for child in node.named_children:
        kind = child.type
        assigned = _assigned_function(child) if kind in _ASSIGNMENTS else None
        if kind in DEFINITIONS or assigned is not None:
            name = assigned if assigned is not None else _name(child)
            symbol = f"{prefix}.{name}" if prefix and name else (name or prefix)
            start, end = child.start_point[0] + 1, child.end_point[0] + 1
            if end - start + 1 <= MAX_LINES or not _has_definitions(child):
                spans.append((start, end, symbol))
            else:
                inner: list[tuple[int, int, str]] = []
                _collect(child, symbol, inner)
                first = inner[0][0] if inner else end + 1
                if first > start:  # the class header, docstring and fields
                    spans.append((start, first - 1, symbol))
                spans.extend(inner)
        elif kind in CONTAINERS or kind == "decorated_definition":
            _collect(child, prefix, spans)


def _has_definitions(node: Any) -> bool:
    stack = list(node.named_children)
    while stack:
        child = stack.pop()
        if child.type in DEFINITIONS or (
                child.type in _ASSIGNMENTS and _assigned_function(child) is not None):
            return True
        if child.type in CONTAINERS:
            stack.extend(child.named_children)
    return False


def _assemble(lines: list[str], spans: list[tuple[int, int, str]]) -> list[Chunk]:
    chunks: list[Chunk] = []
    cursor = 1  # first line not yet covered
    for start, end, symbol in sorted(spans):
        if start < cursor:  # nested spans already covered (should not happen); skip overlap
            start = cursor
            if start > end:
                continue
        if start > cursor:
            chunks.extend(_gap(lines, cursor, start - 1))
        chunks.extend(_windows(lines, start, end, symbol))
        cursor = end + 1
    if cursor <= len(lines):
        chunks.extend(_gap(lines, cursor, len(lines)))
    return chunks


def _gap(lines: list[str], start: int, end: int) -> Iterator[Chunk]:
    # A lone comment or brace between definitions is not worth a chunk of its own.
    if sum(1 for line in lines[start - 1 : end] if line.strip()) >= 2:
        yield from _windows(lines, start, end, "")


def _windows(lines: list[str], start: int, end: int, symbol: str) -> Iterator[Chunk]:
    """Line windows over [start, end]: one chunk when it fits MAX_LINES, else overlapping."""
    if end - start + 1 <= MAX_LINES:
        yield Chunk(start, end, symbol, "\n".join(lines[start - 1 : end]))
        return
    step = WINDOW_LINES - WINDOW_OVERLAP
    first = start
    while True:
        last = min(first + WINDOW_LINES - 1, end)
        yield Chunk(first, last, symbol, "\n".join(lines[first - 1 : last]))
        if last >= end:
            return
        first += step
