"""Script schema and validation of the scripted model server.

The schema is documented in :mod:`agentls.devtools.replay.command` ("Script schema"):
:func:`load_script` turns a file or a mapping into a validated :class:`Script`, or raises
:class:`ScriptError` naming the file, the step and the problem.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from agentls.devtools.replay.usage import DEFAULT_EMBEDDING_DIMENSIONS

DEFAULT_MODEL = "scripted-model"
FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})


class ScriptError(ValueError):
    """A script that cannot be used; the message names the file, the step and the problem."""


@dataclass(frozen=True)
class TextPattern:
    """A substring, or a regular expression when written as ``/regex/``."""

    raw: str
    regex: re.Pattern[str] | None

    def matches(self, text: str) -> bool:
        return bool(self.regex.search(text)) if self.regex else self.raw in text


@dataclass(frozen=True)
class StepMatch:
    user: TextPattern | None = None
    system: TextPattern | None = None
    tool_results: bool | None = None
    tool: str | None = None
    model: str | None = None
    stream: bool | None = None
    prompt: TextPattern | None = None  # /v1/completions only: the prompt (the prefix)
    suffix: TextPattern | None = None  # /v1/completions only: the suffix sent
    tools: bool | None = None  # the request offers tools (a non-empty ``tools`` field)

    @property
    def completions_only(self) -> bool:
        return self.prompt is not None or self.suffix is not None

    @property
    def chat_only(self) -> bool:
        return (self.user is not None or self.system is not None
                or self.tool_results is not None or self.tool is not None
                or self.tools is not None)


@dataclass(frozen=True)
class ScriptedToolCall:
    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    text: str = ""
    reasoning: str = ""  # streamed first as ``reasoning_content`` deltas (DeepSeek, vLLM style)
    refusal: str = ""  # OpenAI's ``refusal`` field (streamed as ``refusal`` deltas), no content
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Mapping[str, Any] | None = None
    chunk_size: int = 8
    delay_s: float = 0.0
    first_delay_s: float = 0.0
    interleave_tool_calls: bool = False
    # The shapes real servers stream (replay_wire.py documents each and where it comes from).
    call_shape: str = "split"  # "split" (OpenAI) or "whole" (Ollama: each call in one delta)
    reasoning_field: str = "reasoning_content"  # or "reasoning" (Ollama, newer vLLM)
    arguments_as: str = "string"  # "string", "object" (a JSON object), "double" (encoded twice)
    omit_call_ids: bool = False  # calls without "id"
    same_index: bool = False  # every call under index 0
    empty_first_chunk: bool = False  # a first chunk with "choices": []
    done_marker: bool = True  # false: no "data: [DONE]" after the last chunk
    text_tool_calls: str = ""  # the calls written in the text: hermes, mistral, json, fenced
    # Next-edit answers: the prompt's editable region rewritten with these (old, new)
    # replacements, in Zeta's answer format (devtools/replay/next_edit_replies.py).
    rewrite: tuple[tuple[str, str], ...] = ()


TEXT_CALL_FORMS = frozenset({"hermes", "mistral", "mistral_v11", "json", "fenced"})


@dataclass(frozen=True)
class ScriptedError:
    status: int
    body: Any = None
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0


@dataclass(frozen=True)
class Step:
    index: int
    name: str | None
    match: StepMatch
    times: int | None  # None: unlimited
    reply: Reply | None = None
    error: ScriptedError | None = None
    drop_after: int | None = None

    @property
    def label(self) -> str:
        return f"steps[{self.index}]" + (f" ({self.name})" if self.name else "")


@dataclass(frozen=True)
class Script:
    source: str
    models: tuple[str, ...] = (DEFAULT_MODEL,)
    any_model: bool = False
    api_key: str | None = field(default=None, repr=False)
    embedding_dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS
    steps: tuple[Step, ...] = ()
    completions_suffix: bool = True  # false: /v1/completions refuses `suffix` (as vLLM does)


def _fail(where: str, problem: str) -> NoReturn:
    raise ScriptError(f"{where}: {problem}")


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:80]


def _mapping(value: Any, where: str, allowed: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        _fail(where, f"expected a mapping, got {_describe(value)}")
    for key in value:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            _fail(where, f"unknown key {key!r}{hint}; valid keys: {', '.join(sorted(allowed))}")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        _fail(where, f"expected a string, got {_describe(value)}")
    return value


def _int(value: Any, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        _fail(where, f"expected an integer >= {minimum}, got {_describe(value)}")
    return value


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        _fail(where, f"expected a number of seconds >= 0, got {_describe(value)}")
    return float(value)


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        _fail(where, f"expected true or false, got {_describe(value)}")
    return value


def _choice(value: Any, where: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        _fail(where, f"expected one of {list(choices)}, got {_describe(value)}")
    return str(value)


def _pattern(value: Any, where: str) -> TextPattern:
    text = _str(value, where)
    if len(text) >= 2 and text.startswith("/") and text.endswith("/"):
        try:
            return TextPattern(text, re.compile(text[1:-1]))
        except re.error as exc:
            _fail(where, f"invalid regular expression {text!r}: {exc}")
    return TextPattern(text, None)


_MATCH_KEYS = frozenset({"user", "system", "tool_results", "tool", "model", "stream", "prompt",
                         "suffix", "tools"})
_REPLY_KEYS = frozenset(
    {"text", "tool_calls", "finish_reason", "usage", "chunk_size", "delay_s", "first_delay_s",
     "interleave_tool_calls", "reasoning", "refusal", "call_shape", "reasoning_field",
     "arguments_as", "omit_call_ids", "same_index", "empty_first_chunk", "done_marker",
     "text_tool_calls", "rewrite"}
)
_DEFAULT_KEYS = frozenset({"chunk_size", "delay_s", "first_delay_s"})
_USAGE_KEYS = frozenset(
    {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details",
     "completion_tokens_details"}
)
_STEP_KEYS = frozenset({"name", "match", "times", "reply", "error", "drop_after"})
_TOP_KEYS = frozenset({"models", "api_key", "embedding_dimensions", "defaults", "steps",
                       "completions_suffix"})


def _parse_match(value: Any, where: str) -> StepMatch:
    raw = _mapping(value if value is not None else {}, where, _MATCH_KEYS)
    get = raw.get
    return StepMatch(
        user=_pattern(get("user"), f"{where}.user") if get("user") is not None else None,
        system=_pattern(get("system"), f"{where}.system") if get("system") is not None else None,
        tool_results=(
            _bool(get("tool_results"), f"{where}.tool_results")
            if get("tool_results") is not None else None
        ),
        tool=_str(get("tool"), f"{where}.tool") if get("tool") is not None else None,
        model=_str(get("model"), f"{where}.model") if get("model") is not None else None,
        stream=_bool(get("stream"), f"{where}.stream") if get("stream") is not None else None,
        prompt=_pattern(get("prompt"), f"{where}.prompt") if get("prompt") is not None else None,
        suffix=_pattern(get("suffix"), f"{where}.suffix") if get("suffix") is not None else None,
        tools=_bool(get("tools"), f"{where}.tools") if get("tools") is not None else None,
    )


def _parse_tool_call(value: Any, where: str) -> ScriptedToolCall:
    raw = _mapping(value, where, frozenset({"id", "name", "arguments"}))
    if "name" not in raw:
        _fail(where, f"'name' is required (got keys: {', '.join(map(str, raw)) or 'none'})")
    arguments = raw.get("arguments", {})
    if isinstance(arguments, Mapping):
        arguments = json.dumps(arguments, ensure_ascii=False)
    elif not isinstance(arguments, str):
        problem = f"expected a mapping or a raw string, got {_describe(arguments)}"
        _fail(f"{where}.arguments", problem)
    call_id = _str(raw["id"], f"{where}.id") if raw.get("id") is not None else None
    return ScriptedToolCall(_str(raw["name"], f"{where}.name"), arguments, call_id)


def _parse_usage(value: Any, where: str) -> Mapping[str, Any]:
    raw = _mapping(value, where, _USAGE_KEYS)
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        if key in raw:
            _int(raw[key], f"{where}.{key}", 0)
    for key in ("prompt_tokens_details", "completion_tokens_details"):
        if key in raw and not isinstance(raw[key], Mapping):
            _fail(f"{where}.{key}", f"expected a mapping, got {_describe(raw[key])}")
    return dict(raw)


def _parse_reply(value: Any, where: str, defaults: Mapping[str, Any]) -> Reply:
    raw = {**defaults, **_mapping(value if value is not None else {}, where, _REPLY_KEYS)}
    calls = raw.get("tool_calls") or []
    if not isinstance(calls, list):
        _fail(f"{where}.tool_calls", f"expected a list, got {_describe(calls)}")
    finish = raw.get("finish_reason")
    if finish is not None and finish not in FINISH_REASONS:
        _fail(f"{where}.finish_reason", f"expected one of {sorted(FINISH_REASONS)}, got {finish!r}")
    return Reply(
        text=_str(raw.get("text", ""), f"{where}.text"),
        reasoning=_str(raw.get("reasoning", ""), f"{where}.reasoning"),
        refusal=_str(raw.get("refusal", ""), f"{where}.refusal"),
        tool_calls=tuple(
            _parse_tool_call(call, f"{where}.tool_calls[{i}]") for i, call in enumerate(calls)
        ),
        finish_reason=finish,
        usage=_parse_usage(raw["usage"], f"{where}.usage") if raw.get("usage") else None,
        chunk_size=_int(raw.get("chunk_size", 8), f"{where}.chunk_size", 1),
        delay_s=_seconds(raw.get("delay_s", 0), f"{where}.delay_s"),
        first_delay_s=_seconds(raw.get("first_delay_s", 0), f"{where}.first_delay_s"),
        interleave_tool_calls=_bool(
            raw.get("interleave_tool_calls", False), f"{where}.interleave_tool_calls"
        ),
        call_shape=_choice(raw.get("call_shape", "split"), f"{where}.call_shape",
                           ("split", "whole")),
        reasoning_field=_choice(raw.get("reasoning_field", "reasoning_content"),
                                f"{where}.reasoning_field", ("reasoning_content", "reasoning")),
        arguments_as=_choice(raw.get("arguments_as", "string"), f"{where}.arguments_as",
                             ("string", "object", "double")),
        omit_call_ids=_bool(raw.get("omit_call_ids", False), f"{where}.omit_call_ids"),
        same_index=_bool(raw.get("same_index", False), f"{where}.same_index"),
        empty_first_chunk=_bool(raw.get("empty_first_chunk", False),
                                f"{where}.empty_first_chunk"),
        done_marker=_bool(raw.get("done_marker", True), f"{where}.done_marker"),
        text_tool_calls=(_choice(raw["text_tool_calls"], f"{where}.text_tool_calls",
                                 tuple(sorted(TEXT_CALL_FORMS)))
                         if raw.get("text_tool_calls") else ""),
        rewrite=_parse_rewrite(raw.get("rewrite", []), f"{where}.rewrite"),
    )


def _parse_rewrite(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list) or not all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
            and pair[0] for pair in value):
        _fail(where, "expected a list of [old, new] string pairs (old not empty), e.g. "
              '[["count", "total"]]')
    return tuple((old, new) for old, new in value)


def _parse_error(value: Any, where: str) -> ScriptedError:
    raw = _mapping(value, where, frozenset({"status", "body", "headers", "delay_s"}))
    if "status" not in raw:
        _fail(where, "'status' is required (an HTTP status such as 429 or 503)")
    status = _int(raw["status"], f"{where}.status", 400)
    if status > 599:
        _fail(f"{where}.status", f"expected an HTTP error status 400-599, got {status}")
    headers = raw.get("headers") or {}
    if not isinstance(headers, Mapping):
        _fail(f"{where}.headers", f"expected a mapping, got {_describe(headers)}")
    for name, header in headers.items():
        if not isinstance(header, str | int | float) or isinstance(header, bool):
            problem = f"expected a string or number, got {_describe(header)}"
            _fail(f"{where}.headers.{name}", problem)
    body = raw.get("body")
    if body is not None and not isinstance(body, str | Mapping | list):
        _fail(f"{where}.body", f"expected a mapping or a string, got {_describe(body)}")
    return ScriptedError(
        status=status,
        body=body,
        headers=tuple((str(k), str(v)) for k, v in headers.items()),
        delay_s=_seconds(raw.get("delay_s", 0), f"{where}.delay_s"),
    )


def _parse_step(value: Any, index: int, source: str, defaults: Mapping[str, Any]) -> Step:
    name = value.get("name") if isinstance(value, Mapping) else None
    where = f"{source}: steps[{index}]" + (f" ({name})" if isinstance(name, str) else "")
    raw = _mapping(value, where, _STEP_KEYS)
    if ("reply" in raw) == ("error" in raw):
        _fail(where, "needs exactly one of 'reply' or 'error'")
    if "drop_after" in raw and "reply" not in raw:
        _fail(where, "'drop_after' cuts a reply's stream: give the step a 'reply' too")
    times = raw.get("times", 1)
    return Step(
        index=index,
        name=_str(name, f"{where}.name") if name is not None else None,
        match=_parse_match(raw.get("match"), f"{where}.match"),
        times=None if times == "*" else _int(times, f"{where}.times", 1),
        reply=_parse_reply(raw["reply"], f"{where}.reply", defaults) if "reply" in raw else None,
        error=_parse_error(raw["error"], f"{where}.error") if "error" in raw else None,
        drop_after=(
            _int(raw["drop_after"], f"{where}.drop_after", 0)
            if raw.get("drop_after") is not None else None
        ),
    )


def _read_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptError(f"{path}: cannot read the script: {exc.strerror or exc}") from exc
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise ScriptError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or exc
        raise ScriptError(f"{path}: invalid YAML{line}: {problem}") from exc


def load_script(source: Script | Mapping[str, Any] | str | Path) -> Script:
    """Load and validate a script from a file (``.json`` or YAML) or a mapping."""
    if isinstance(source, Script):
        return source
    if isinstance(source, str | Path):
        label, data = str(source), _read_file(Path(source))
    else:
        label, data = "<script>", source
    raw = _mapping(data, label, _TOP_KEYS)
    models_raw = raw.get("models", [DEFAULT_MODEL])
    models = [models_raw] if isinstance(models_raw, str) else models_raw
    if not isinstance(models, list) or not all(isinstance(m, str) and m for m in models):
        _fail(f"{label}: models", f"expected a list of model names, got {_describe(models_raw)}")
    api_key = raw.get("api_key")
    if api_key is not None and (not isinstance(api_key, str) or not api_key):
        _fail(f"{label}: api_key", "expected a non-empty string or null")  # value not echoed
    defaults = dict(_mapping(raw.get("defaults") or {}, f"{label}: defaults", _DEFAULT_KEYS))
    steps = raw.get("steps") or []
    if not isinstance(steps, list):
        _fail(f"{label}: steps", f"expected a list of steps, got {_describe(steps)}")
    return Script(
        source=label,
        models=tuple(m for m in models if m != "*"),
        any_model="*" in models,
        api_key=api_key,
        embedding_dimensions=_int(
            raw.get("embedding_dimensions", DEFAULT_EMBEDDING_DIMENSIONS),
            f"{label}: embedding_dimensions",
            1,
        ),
        steps=tuple(_parse_step(s, i, label, defaults) for i, s in enumerate(steps)),
        completions_suffix=_bool(raw.get("completions_suffix", True),
                                 f"{label}: completions_suffix"),
    )
