"""Reading tool calls a model wrote as text (llm/text_tool_calls.py) and the stream assembly
of odd call shapes (llm/stream_assembly.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS
from typing import Any

import pytest

from agentls.llm.messages import Message, ToolCall, ToolSpec
from agentls.llm.stream_assembly import StreamAssembler, arguments_text
from agentls.llm.text_tool_calls import as_text_protocol, read_text_calls

EDIT = ToolSpec("edit_file", "Edit a file.", {
    "type": "object", "properties": {"path": {"type": "string"}, "edits": {"type": "array"}},
    "required": ["path", "edits"], "additionalProperties": False})
READ = ToolSpec("read_file", "Read a file.", {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
TOOLS = [EDIT, READ]
ARGS = {"path": "a.py", "edits": [{"search": "x", "replace": "y"}]}


@pytest.mark.parametrize(("text", "form", "outside"), [
    ('Fixing.\n<tool_call>\n{"name": "edit_file", "arguments": %s}\n</tool_call>', "hermes",
     "Fixing."),
    ('<tool_call>{"name": "edit_file", "arguments": %s}', "hermes", ""),  # cut before the end
    ('Sure.[TOOL_CALLS][{"name": "edit_file", "arguments": %s}]', "mistral", "Sure."),
    ("[TOOL_CALLS]edit_file%s", "mistral", ""),
    ('{"name": "edit_file", "arguments": %s}', "json", ""),
    ('Here:\n```json\n{"name": "edit_file", "arguments": %s}\n```\n', "fenced", "Here:"),
    ('{"name": "edit_file", "parameters": %s}', "json", ""),  # Llama 3.1's key
])
def test_each_form_is_read(text: str, form: str, outside: str) -> None:
    reading = read_text_calls(text % json.dumps(ARGS), TOOLS)
    assert reading.form == form and reading.text == outside and not reading.problem
    assert [(c.name, json.loads(c.arguments)) for c in reading.calls] == [("edit_file", ARGS)]


def test_arguments_given_as_a_json_string_are_read() -> None:
    text = json.dumps({"name": "read_file", "arguments": json.dumps({"path": "a.py"})})
    assert read_text_calls(text, TOOLS).calls[0].arguments == '{"path": "a.py"}'


def test_several_hermes_blocks_are_several_calls() -> None:
    text = "".join(f'<tool_call>{{"name": "read_file", "arguments": {{"path": "{p}"}}}}'
                   "</tool_call>" for p in ("a.py", "b.py"))
    reading = read_text_calls(text, TOOLS)
    assert [json.loads(c.arguments)["path"] for c in reading.calls] == ["a.py", "b.py"]
    assert len({c.id for c in reading.calls}) == 2


@pytest.mark.parametrize("text", [
    "Use `read_file` with a path to read a file.",
    '{"path": "a.py"}',  # a JSON object that is not a call
    'The config is:\n```json\n{"name": "my-package", "version": "1.0"}\n```',
    '```python\n{"name": "edit_file", "arguments": {}}\n```',  # not a JSON block
    "{not json at all",
])
def test_prose_and_other_json_are_not_calls(text: str) -> None:
    reading = read_text_calls(text, TOOLS)
    assert not reading.calls and not reading.problem and reading.text == text


@pytest.mark.parametrize(("text", "problem"), [
    ('<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>',
     "'delete_everything', which is not one of the tools offered"),
    ('<tool_call>{"name": "read_file", "arguments": {"path": 3}}</tool_call>',
     "do not fit its schema: path: 3 is not of type 'string'"),
    ('<tool_call>{"name": "read_file", "arguments": {}}</tool_call>', "'path' is a required"),
    ("<tool_call>{'name': 'read_file'}</tool_call>", "not valid JSON"),
    ('<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>[TOOL_CALLS]',
     "no single reading"),
    ('{"name": "read_file", "arguments": {"path": "a"}, "parameters": {"path": "b"}}',
     "both"),
    ('```json\n{"name": "read_file", "arguments": {"path": "a"}}\n```\n'
     '```json\n{"name": "read_file", "arguments": {"path": "b"}}\n```', "no single reading"),
])
def test_attempts_that_cannot_be_read_say_why(text: str, problem: str) -> None:
    reading = read_text_calls(text, TOOLS)
    assert not reading.calls and problem in reading.problem


def test_the_text_protocol_writes_calls_and_results_as_messages() -> None:
    call = ToolCall("c1", "read_file", '{"path": "a.py"}')
    wire = as_text_protocol([Message.system("sys"), Message.user("go"),
                             Message.assistant("Reading.", [call]),
                             Message.tool("c1", "print(1)", name="read_file")], TOOLS)
    assert [m["role"] for m in wire] == ["system", "system", "user", "assistant", "user"]
    assert '"name": "edit_file"' in wire[1]["content"] and "<tool_call>" in wire[1]["content"]
    assert wire[3]["content"] == ('Reading.\n<tool_call>{"name": "read_file", "arguments": '
                                  '{"path": "a.py"}}</tool_call>')
    assert wire[4]["content"].startswith("[tool result] read_file (c1):\nprint(1)")
    assert all("tool_calls" not in m for m in wire)


# --- the stream assembly ----------------------------------------------------------------------

def chunk(*calls: dict[str, Any], finish: str | None = None, content: str | None = None,
          **delta: Any) -> NS:
    parts = [NS(index=c.get("index"), id=c.get("id"),
                function=NS(name=c.get("name"), arguments=c.get("arguments")))
             for c in calls]
    return NS(usage=None, model="m", choices=[NS(
        delta=NS(content=content, tool_calls=parts or None, refusal=None, **delta),
        finish_reason=finish)])


def test_arguments_as_an_object_are_encoded() -> None:
    assembler = StreamAssembler()
    assembler.feed(chunk({"index": 0, "id": "a", "name": "read_file",
                          "arguments": {"path": "a.py"}}, finish="tool_calls"))
    assert assembler.tool_calls() == [ToolCall("a", "read_file", '{"path": "a.py"}')]


def test_double_encoded_arguments_are_decoded_once() -> None:
    assert arguments_text(json.dumps('{"path": "a.py"}')) == '{"path": "a.py"}'
    assert arguments_text('"just a string"') == '"just a string"'  # the tool says it is wrong
    assert arguments_text(None) == "" and arguments_text([1]) == "[1]"


def test_one_index_reused_for_whole_calls_gives_two_calls() -> None:
    assembler = StreamAssembler()
    assembler.feed(chunk({"index": 0, "name": "read_file", "arguments": '{"path": "a"}'}))
    assembler.feed(chunk({"index": 0, "name": "read_file", "arguments": '{"path": "b"}'},
                         finish="stop"))
    calls = assembler.tool_calls()
    assert [json.loads(c.arguments)["path"] for c in calls] == ["a", "b"]
    assert calls[0].id != calls[1].id


def test_split_arguments_under_one_index_stay_one_call() -> None:
    assembler = StreamAssembler()
    assembler.feed(chunk({"index": 0, "id": "x", "name": "read_file", "arguments": ""}))
    for piece in ('{"pa', 'th": ', '"a"}'):
        assembler.feed(chunk({"index": 0, "arguments": piece}))
    assert assembler.tool_calls() == [ToolCall("x", "read_file", '{"path": "a"}')]


def test_calls_without_an_index_are_told_apart_by_their_names() -> None:
    assembler = StreamAssembler()
    assembler.feed(chunk({"name": "read_file", "arguments": '{"path": "a"}'},
                         {"name": "read_file", "arguments": '{"path": "b"}'}))
    assert [c.id for c in assembler.tool_calls()] == ["call_0", "call_1"]


def test_reasoning_field_is_read_like_reasoning_content() -> None:
    assembler = StreamAssembler()
    assembler.feed(chunk(reasoning="hmm", reasoning_content=None))
    assert assembler.reasoning == "hmm"
