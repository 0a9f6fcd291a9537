"""Chunking follows code structure in several languages; other text gets line windows."""

from __future__ import annotations

import itertools

from agentls.index.chunker import MAX_LINES, WINDOW_LINES, chunk_file
from agentls.index.words import code_words, match_query, split_identifier


def symbols(path: str, text: str) -> list[str]:
    return [c.symbol for c in chunk_file(path, text) if c.symbol]


def test_python_functions_classes_and_methods() -> None:
    long_body = "\n".join(f"        x{i} = {i}" for i in range(MAX_LINES))
    text = (
        "import os\nimport sys\n\n\n"
        "def top(a):\n    return a\n\n\n"
        "@decorator\ndef wrapped():\n    pass\n\n\n"
        "class Small:\n    def m(self):\n        pass\n\n\n"
        f"class Big:\n    \"\"\"Doc.\"\"\"\n\n    def first(self):\n{long_body}\n\n"
        "    def second(self):\n        return 2\n"
    )
    chunks = chunk_file("m.py", text)
    assert [c.symbol for c in chunks] == ["", "top", "wrapped", "Small", "Big", "Big.first",
                                          "Big.first", "Big.first", "Big.second"]
    head = chunks[0]
    assert head.start_line == 1 and head.text.startswith("import os\nimport sys")
    top = chunks[1]
    assert top.text == "def top(a):\n    return a" and (top.start_line, top.end_line) == (5, 6)
    # The oversized method is cut into overlapping windows that keep its symbol.
    first = [c for c in chunks if c.symbol == "Big.first"]
    assert first[0].end_line - first[0].start_line + 1 == WINDOW_LINES
    assert first[1].start_line < first[0].end_line


def test_javascript_typescript_go_rust_java() -> None:
    js = "export function add(a, b) {\n  return a + b;\n}\n\nclass Cart {\n  total() {\n" \
         "    return 0;\n  }\n}\n"
    assert symbols("a.js", js) == ["add", "Cart"]
    ts = "interface Shape {\n  area(): number;\n}\n\nfunction area(s: Shape): number {\n" \
         "  return s.area();\n}\n"
    assert symbols("a.ts", ts) == ["Shape", "area"]
    go = "package main\n\nfunc Serve() {\n}\n\ntype Config struct {\n\tPort int\n}\n"
    assert symbols("a.go", go) == ["Serve", "Config"]
    rust = "pub struct M {\n    n: u8,\n}\n\nimpl M {\n    pub fn new() -> M {\n" \
           "        M { n: 0 }\n    }\n}\n\nfn gcd(a: u64) -> u64 {\n    a\n}\n"
    assert symbols("a.rs", rust) == ["M", "M", "gcd"]
    java = "public class Q {\n    public void push(int x) {\n    }\n}\n"
    assert symbols("Q.java", java) == ["Q"]


def test_docs_and_unknown_languages_get_overlapping_windows() -> None:
    text = "\n".join(f"line {i}" for i in range(1, 201))
    chunks = chunk_file("notes.md", text)
    assert all(c.symbol == "" for c in chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 200
    for before, after in itertools.pairwise(chunks):
        assert after.start_line <= before.end_line  # overlap
    assert chunk_file("short.toml", "a = 1\nb = 2\n")[0].text == "a = 1\nb = 2"
    assert chunk_file("empty.py", "") == []


def test_broken_source_still_chunks() -> None:
    chunks = chunk_file("bad.py", "def f(:\n    return (\n\nclass\n")
    assert chunks and chunks[0].start_line == 1


def test_code_aware_words() -> None:
    assert split_identifier("getHTTPResponse") == ["get", "http", "response"]
    assert split_identifier("retry_rate_limit") == ["retry", "rate", "limit"]
    words = code_words("def retryRateLimit(self): pass")
    assert {"retryratelimit", "retry", "rate", "limit"} <= set(words)
    assert "self" not in words
    assert match_query('rate "limits" OR) NEAR(') == '"rate" OR "limits" OR "near"'
    assert match_query("the of a") is None
    assert match_query("where do we retry?") == '"retry"'  # question glue is not searched


# One definition per supported language: the chunker names it (the symbol routing and the
# definition lookup of a symbol query rely on these names).
DEFINITION_SOURCES = {
    "python": ("m.py", "import os\n\n\ndef parse_header(raw):\n    return raw\n", "parse_header"),
    "javascript": ("m.js", "const a = 1;\n\nfunction parseHeader(raw) {\n  return raw;\n}\n",
                   "parseHeader"),
    "typescript": ("m.ts", "interface Header {\n  name: string;\n}\n", "Header"),
    "tsx": ("m.tsx", "export function Panel() {\n  return null;\n}\n", "Panel"),
    "go": ("m.go", "package m\n\ntype Engine struct {\n\tname string\n}\n", "Engine"),
    "rust": ("m.rs", "pub trait Visitor {\n    fn visit(&self);\n}\n", "Visitor"),
    "java": ("M.java", "class Gson {\n  int x;\n}\n", "Gson"),
    "c": ("m.c", "#include <x.h>\n\nint uv_loop_init(int *loop) {\n  return 0;\n}\n",
          "uv_loop_init"),
    "cpp": ("m.hpp", "namespace fmt {\ntemplate <typename T> class basic_memory_buffer {\n"
                     "  T x;\n};\n}\n", "basic_memory_buffer"),
    "ruby": ("m.rb", "module Rack\n  class Builder\n    def use(m)\n    end\n  end\nend\n",
             "Rack"),
    "csharp": ("M.cs", "class Serializer {\n  int x;\n}\n", "Serializer"),
    "kotlin": ("m.kt", "object Registry {\n  val x = 1\n}\n", "Registry"),
    "swift": ("m.swift", "protocol Session {\n  func start()\n}\n", "Session"),
    "php": ("m.php", "<?php\nclass Logger {\n  public function log() {}\n}\n", "Logger"),
    "scala": ("m.scala", "class Decoder {\n  val x = 1\n}\n", "Decoder"),
    "lua": ("m.lua", "local M = {}\n\nfunction setup(opts)\n  return opts\nend\n", "setup"),
    "bash": ("m.sh", "#!/bin/sh\n\nnvm_install() {\n  echo hi\n}\n", "nvm_install"),
}


def test_each_language_names_its_definitions() -> None:
    missing = {language: symbols(path, text)
               for language, (path, text, name) in DEFINITION_SOURCES.items()
               if not any(s == name or s.startswith(name + ".") for s in symbols(path, text))}
    assert not missing, missing


def test_functions_made_by_assignment_are_named() -> None:
    js = ("var x = 1;\nvar y = 2;\n\nRouter.prototype.route = function route(path) {\n"
          "  return path;\n};\n\napp.use = function use(fn) {\n  return fn;\n};\n\n"
          "const parse = (text) => {\n  return text;\n};\n\nconst count = 3;\n")
    assert symbols("lib/router.js", js) == ["Router.route", "app.use", "parse"]
    ts = "export const initTRPC = () => {\n  return 1;\n};\n"
    assert symbols("init.ts", ts) == ["initTRPC"]


def test_cpp_functions_templates_and_rust_macros_are_named() -> None:
    cpp = ("#include <x>\n#include <y>\nnamespace nlohmann {\n"
           "template <typename T> struct adl_serializer {\n  T v;\n};\n"
           "int basic_json::size(int a) {\n  return a;\n}\n}\n")
    assert symbols("json.hpp", cpp) == ["adl_serializer", "size"]
    assert symbols("select.rs", "macro_rules! select {\n    () => {};\n}\n") == ["select"]
