"""Tool calls a model wrote as text, read back as calls; and the text protocol for models
that have no native tool calling.

A model served without its tool parser (llama.cpp without ``--jinja``, an Ollama model whose
template has no tools, vLLM without ``--tool-call-parser``) answers with the call in its text
and ``finish_reason: "stop"``. The forms read here are the ones those servers' own parsers
read when they are switched on:

* Hermes / Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, one block per
  call (vLLM ``tool_parsers/hermes_tool_parser.py``; llama.cpp ``common/chat.cpp`` Hermes 2
  Pro format);
* Mistral: ``[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]`` (vLLM
  ``tool_parsers/mistral_tool_parser.py``, pre-v11 tokenizers), and the v11 form
  ``[TOOL_CALLS]name{...arguments...}``;
* a bare JSON object ``{"name": ..., "arguments": {...}}`` (or a list of them) that is the
  whole answer, or the same inside one fenced code block.

A reading counts only when it is unambiguous: every call names a tool that was offered, its
arguments are an object valid against that tool's JSON schema, and only one form is present.
Anything else is not a call; when the text plainly tried to call (the markup is there, or a
``{name, arguments}`` object) but cannot be read, :attr:`TextReading.problem` says why, and
the caller stops the run with that reason and what to do rather than showing the attempt as
the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentls.llm.messages import Message, ToolCall, ToolSpec

HERMES_OPEN, HERMES_CLOSE = "<tool_call>", "</tool_call>"
MISTRAL_TOKEN = "[TOOL_CALLS]"

_HERMES = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)
_MISTRAL_V11 = re.compile(r"\s*([A-Za-z0-9_.:-]+)\s*(\{)")

FORM_NAMES = {"hermes": "<tool_call>…</tool_call> (Hermes/Qwen)",
              "mistral": "[TOOL_CALLS][…] (Mistral)", "json": "a bare JSON object",
              "fenced": "a fenced JSON block"}


@dataclass
class TextReading:
    """What a model's text holds: the calls read (``form`` names how they were written), the
    text outside them, or why an attempted call could not be read."""

    calls: list[ToolCall] = field(default_factory=list)
    text: str = ""
    form: str = ""
    problem: str = ""

    @property
    def attempted(self) -> bool:
        return bool(self.calls or self.problem)


class _Unreadable(ValueError):
    pass


def read_text_calls(text: str, tools: Sequence[ToolSpec], *, id_prefix: str = "text_call"
                    ) -> TextReading:
    """The tool calls written in ``text`` (see the module's docstring for the forms)."""
    if not text or not tools:
        return TextReading(text=text)
    by_name = {tool.name: tool for tool in tools}
    has_hermes = HERMES_OPEN in text
    has_mistral = MISTRAL_TOKEN in text
    if has_hermes and has_mistral:
        return TextReading(text=text, problem="the text mixes <tool_call> and [TOOL_CALLS] "
                           "markup, so it has no single reading")
    try:
        if has_hermes:
            raw = [_json_value(m.group(1).strip(), "a <tool_call> block")
                   for m in _HERMES.finditer(text)]
            outside = _HERMES.sub("", text)
            return _reading(raw, by_name, "hermes", outside, id_prefix)
        if has_mistral:
            before, _, rest = text.partition(MISTRAL_TOKEN)
            return _reading(_mistral_items(rest), by_name, "mistral", before, id_prefix)
        stripped = text.strip()
        if stripped.startswith(("{", "[")):
            try:
                value = json.loads(stripped)
            except json.JSONDecodeError:
                return TextReading(text=text)  # prose that starts with a brace
            if _looks_like_calls(value):
                return _reading(_as_list(value), by_name, "json", "", id_prefix)
            return TextReading(text=text)
        fenced = [m for m in _FENCE.finditer(text) if m.group(1).lower() in ("", "json")]
        candidates = []
        for match in fenced:
            try:
                value = json.loads(match.group(2))
            except json.JSONDecodeError:
                continue
            if _looks_like_calls(value):
                candidates.append((match, value))
        if len(candidates) > 1:
            return TextReading(text=text, problem="the text has several fenced JSON blocks "
                               "shaped as tool calls, so it has no single reading")
        if candidates:
            match, value = candidates[0]
            outside = text[:match.start()] + text[match.end():]
            return _reading(_as_list(value), by_name, "fenced", outside, id_prefix)
    except _Unreadable as exc:
        return TextReading(text=text, problem=str(exc))
    return TextReading(text=text)


def _json_value(raw: str, where: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise _Unreadable(f"{where} is not valid JSON ({exc.msg} at character {exc.pos})") \
            from exc


def _mistral_items(rest: str) -> list[Any]:
    """The calls after ``[TOOL_CALLS]``: a JSON list (or object), or ``name{args}`` pieces,
    each piece possibly after its own ``[TOOL_CALLS]``."""
    body = rest.strip()
    if body.startswith(("[", "{")):
        decoder = json.JSONDecoder()
        try:
            value, end = decoder.raw_decode(body)
        except json.JSONDecodeError as exc:
            raise _Unreadable(f"the [TOOL_CALLS] list is not valid JSON ({exc.msg})") from exc
        if body[end:].strip():
            raise _Unreadable("text follows the [TOOL_CALLS] list")
        return _as_list(value)
    items: list[Any] = []
    decoder = json.JSONDecoder()
    for piece in body.split(MISTRAL_TOKEN):
        position = 0
        while position < len(piece) and piece[position:].strip():
            match = _MISTRAL_V11.match(piece, position)
            if match is None:
                raise _Unreadable("[TOOL_CALLS] is followed by neither a JSON list nor "
                                  "name{arguments}")
            try:
                arguments, end = decoder.raw_decode(piece, match.start(2))
            except json.JSONDecodeError as exc:
                raise _Unreadable(f"the arguments of {match.group(1)!r} after [TOOL_CALLS] "
                                  f"are not valid JSON ({exc.msg})") from exc
            items.append({"name": match.group(1), "arguments": arguments})
            position = end
            while position < len(piece) and piece[position] in " \t\r\n,":
                position += 1
    return items


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _call_keys(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("name"), str)
            and set(value) <= {"name", "arguments", "parameters", "id", "type"}
            and ("arguments" in value or "parameters" in value))


def _looks_like_calls(value: Any) -> bool:
    """A ``{name, arguments}`` object, or a non-empty list of only such objects."""
    items = _as_list(value)
    return bool(items) and all(_call_keys(item) for item in items)


def _reading(items: list[Any], by_name: Mapping[str, ToolSpec], form: str, outside: str,
             id_prefix: str) -> TextReading:
    if not items:
        raise _Unreadable(f"the {FORM_NAMES[form]} markup holds no call")
    calls = []
    for index, item in enumerate(items):
        name, arguments = _name_and_arguments(item)
        tool = by_name.get(name)
        if tool is None:
            offered = ", ".join(sorted(by_name)[:12])
            raise _Unreadable(f"it calls {name!r}, which is not one of the tools offered "
                              f"({offered})")
        problem = schema_problem(arguments, tool.parameters)
        if problem:
            raise _Unreadable(f"the arguments of {name!r} do not fit its schema: {problem}")
        calls.append(ToolCall(f"{id_prefix}_{index}", name,
                              json.dumps(arguments, ensure_ascii=False)))
    return TextReading(calls=calls, text=outside.strip(), form=form)


def _name_and_arguments(item: Any) -> tuple[str, dict[str, Any]]:
    if not _call_keys(item):
        raise _Unreadable("a call is not an object with \"name\" and \"arguments\"")
    if "arguments" in item and "parameters" in item:
        raise _Unreadable("a call has both \"arguments\" and \"parameters\"")
    arguments = item.get("arguments", item.get("parameters"))
    if isinstance(arguments, str):  # arguments as a JSON string (OpenAI's own shape)
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise _Unreadable(f"the arguments of {item['name']!r} are a string that is not "
                              "JSON") from exc
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise _Unreadable(f"the arguments of {item['name']!r} are not a JSON object")
    return str(item["name"]), arguments


def schema_problem(arguments: dict[str, Any], schema: Mapping[str, Any]) -> str:
    """Why ``arguments`` do not fit the JSON ``schema`` ("" when they do, or when the schema
    itself cannot be used)."""
    from jsonschema import SchemaError, validators  # type: ignore[import-untyped]

    try:
        validator_class = validators.validator_for(schema)
        validator_class.check_schema(schema)
    except SchemaError:
        return ""
    error = next(iter(sorted(validator_class(schema).iter_errors(arguments),
                             key=lambda e: list(e.path))), None)
    if error is None:
        return ""
    where = "/".join(str(p) for p in error.path)
    return f"{where + ': ' if where else ''}{error.message}"


# --- the text protocol (backends.NAME.tool_calls = "text") ------------------------------------

TEXT_PROTOCOL_INTRO = (
    "You can call tools. To call one, answer with a block of this exact form, and nothing "
    "after it:\n"
    '<tool_call>{"name": "TOOL_NAME", "arguments": {ARGUMENTS AS JSON}}</tool_call>\n'
    "Several calls are several blocks. The result of each call comes back in the next user "
    "message, starting with [tool result]. When you need no tool, answer normally. The tools, "
    "as JSON schemas:"
)


def tools_prompt(tools: Sequence[ToolSpec]) -> str:
    """The system message that describes ``tools`` and how to call them in text."""
    lines = [TEXT_PROTOCOL_INTRO]
    for tool in tools:
        lines.append(json.dumps({"name": tool.name, "description": tool.description,
                                 "parameters": tool.parameters}, ensure_ascii=False))
    return "\n".join(lines)


def as_text_protocol(messages: Sequence[Message], tools: Sequence[ToolSpec]
                     ) -> list[dict[str, Any]]:
    """The wire messages for a server without tools: the tools described after the system
    messages, each assistant call written back as its ``<tool_call>`` block, each result as a
    user message."""
    out: list[dict[str, Any]] = []
    described = False
    for message in messages:
        if not described and message.role != "system":
            out.append({"role": "system", "content": tools_prompt(tools)})
            described = True
        if message.role == "assistant" and message.tool_calls:
            blocks = [HERMES_OPEN + json.dumps({"name": c.name, "arguments": _loose(c)},
                                               ensure_ascii=False) + HERMES_CLOSE
                      for c in message.tool_calls]
            text = "\n".join(part for part in (message.content or "", *blocks) if part)
            out.append({"role": "assistant", "content": text})
        elif message.role == "tool":
            out.append({"role": "user", "content": f"[tool result] {message.name or 'tool'} "
                        f"({message.tool_call_id}):\n{message.content or ''}"})
        else:
            out.append(message.to_openai())
    if not described:
        out.append({"role": "system", "content": tools_prompt(tools)})
    return out


def _loose(call: ToolCall) -> Any:
    try:
        return json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return call.arguments
