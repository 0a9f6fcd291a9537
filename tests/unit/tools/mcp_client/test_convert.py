"""What the model sees of MCP tools: names it can call, schemas its API accepts, results that
are fenced, capped and redacted."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentls.policy import redaction
from agentls.tools.mcp import convert
from agentls.workspace.fence import Workspace

VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_names_are_namespaced_valid_and_distinct() -> None:
    taken: set[str] = set()
    names = [convert.tool_name("git", "git_status", taken),
             convert.tool_name("web", "get.weather/now", taken),
             convert.tool_name("web", "get_weather_now", taken),
             convert.tool_name("web", "x" * 80, taken),
             convert.tool_name("web", "x" * 80 + "y", taken)]
    assert names[0] == "mcp__git__git_status"
    assert names[1] == "mcp__web__get_weather_now"
    assert names[2] == "mcp__web__get_weather_now_2"  # same after cleaning: told apart
    assert all(VALID.match(n) for n in names) and len(set(names)) == 5


def test_schema_is_trimmed_and_refs_inlined() -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Args",
              "type": "object", "$defs": {"Mode": {"title": "Mode", "enum": ["a", "b"]}},
              "properties": {"mode": {"$ref": "#/$defs/Mode", "examples": ["a"]},
                             "title": {"type": "string", "description": "d" * 500}}}
    trimmed = convert.trim_schema(schema)
    assert trimmed == {"type": "object", "properties": {
        "mode": {"enum": ["a", "b"]},
        "title": {"type": "string", "description": "d" * 299 + "…"}}}


def test_an_array_without_items_gets_items_openai_requires_them() -> None:
    trimmed = convert.trim_schema({"type": "object", "properties": {
        "tags": {"type": "array"}, "maybe": {"type": ["array", "null"]},
        "typed": {"type": "array", "items": {"type": "string"}}}})
    assert trimmed["properties"] == {"tags": {"type": "array", "items": {}},
                                     "maybe": {"type": ["array", "null"], "items": {}},
                                     "typed": {"type": "array", "items": {"type": "string"}}}


@pytest.mark.parametrize(("schema", "problem"), [
    ({"type": "object", "properties": {"v": {"type": "strnig"}}}, "not valid JSON Schema"),
    ({"type": "array"}, "not 'object'"),
    ({"type": "object", "properties": {"v": {"$ref": "#/$defs/Gone"}}}, "which it lacks"),
    ("not a schema", "not a JSON object"),
])
def test_schemas_a_model_api_would_refuse_are_named(schema: Any, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        convert.trim_schema(schema)


def _text(text: str) -> SimpleNamespace:
    return SimpleNamespace(type="text", text=text)


def _result(*blocks: SimpleNamespace, error: bool = False) -> SimpleNamespace:
    return SimpleNamespace(content=list(blocks), is_error=error, structured_content=None)


def test_results_are_capped_redacted_and_fenced(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    ws = Workspace([tmp_path])
    redaction.add_secrets(["planted-secret-value-1234"])
    try:
        out = convert.result_to_dict(_result(
            _text("key planted-secret-value-1234 " + "x" * 50_000),
            SimpleNamespace(type="image", data="aGVsbG8=", mime_type="image/png"),
            SimpleNamespace(type="resource_link", uri=f"file://{tmp_path}/a.txt", name="a.txt",
                            mime_type=None),
            SimpleNamespace(type="resource_link", uri="file:///etc/shadow", name="shadow",
                            mime_type=None),
            SimpleNamespace(type="resource", resource=SimpleNamespace(
                uri=f"file://{tmp_path}/../outside.txt", text="leaked"))), ws, 8_000)
    finally:
        redaction.forget_secrets()
    assert out["ok"] is True and len(out["content"]) <= 8_200
    assert "planted-secret-value-1234" not in out["content"] and "[REDACTED]" in out["content"]
    assert "characters cut to 8,000" in out["truncated"]
    assert "[image image/png, 5 bytes: not shown" in out["content"]
    assert f"<file://{tmp_path}/a.txt>" in out["content"]
    assert "shadow" not in out["content"] and "leaked" not in out["content"]
    assert [w.split(":")[0] for w in out["withheld"]] == ["file", "file"]


def test_a_tool_error_is_a_failed_result(tmp_path: Path) -> None:
    out = convert.result_to_dict(_result(_text("no such repo"), error=True),
                                 Workspace([tmp_path]), 1_000)
    assert out == {"ok": False, "error": "MCP_TOOL_ERROR", "content": "no such repo"}
