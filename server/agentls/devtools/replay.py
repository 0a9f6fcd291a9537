"""The scripted model server: a real OpenAI-compatible HTTP server driven by a script.

It is not a model. Tests, the demo and the benchmarks point the real ``openai`` client at
it (``base_url`` = :attr:`ReplayServer.base_url`) and it answers each request with the
next script step that fits: streamed text, parallel tool calls split across chunks, an
HTTP error with status, body and headers, delays, or a connection cut mid-stream.

Endpoints (all under ``/v1``)
-----------------------------
``POST /v1/chat/completions``
    ``stream: true`` answers Server-Sent Events (``data: {chat.completion.chunk}`` …
    ``data: [DONE]``) with ``Transfer-Encoding: chunked``, one HTTP chunk per event, so a
    dropped connection is an incomplete chunked body to the client, not a clean EOF.
    The first event carries ``delta.role`` (with ``content: ""``, or with the first tool
    call when the reply has no text), then text pieces, then tool calls (the first delta
    of a call carries ``index``, ``id``, ``type``, ``function.name`` and ``arguments: ""``;
    later deltas carry ``index`` and an ``arguments`` piece), then an empty delta with
    ``finish_reason``. With ``stream_options.include_usage`` every chunk has
    ``"usage": null`` and a last chunk has ``choices: []`` and the usage. Without
    ``stream`` the answer is one ``chat.completion`` object with ``usage``.
``GET /v1/models``, ``GET /v1/models/{id}``
    The script's model list (``owned_by: "scripted"``).
``POST /v1/embeddings``
    Deterministic vectors: lower-cased ``\\w+`` tokens are hashed (BLAKE2b) into
    ``dimensions`` buckets with a hashed sign, then L2-normalised, so texts sharing words
    get similar vectors. ``input`` is a string, a list of strings, or token arrays;
    ``encoding_format`` ``float`` or ``base64`` (little-endian float32; the openai client
    asks for base64 by default); ``dimensions`` honoured. Script steps are not consumed.
Anything else
    404 ``Invalid URL (METHOD /path)`` in OpenAI's error shape
    ``{"error": {"message", "type", "param", "code"}}``.

Checks, in OpenAI's order: the bearer key when the script sets ``api_key`` (401,
``invalid_api_key``; the key is never echoed, printed or logged), then the model
(404 ``model_not_found``: "The model `x` does not exist or you do not have access to
it."), then the script. A chat request no step fits gets HTTP 500 with code
``no_matching_step`` and the message "scripted model: no script step matches this
request (last user message: …)". Note that a client with retries retries a 500.

Usage (token counts)
--------------------
``T(text)`` = number of matches of the regex ``\\w+|[^\\w\\s]`` (words and single
punctuation marks; whitespace is free).

* ``prompt_tokens`` = Σ over messages of ``4 + T(content)`` (content: the string, or the
  ``text`` of each part joined with newlines) ``+ Σ over its tool_calls of
  T(function.name) + T(function.arguments)``; plus ``T(json.dumps(tools))`` when the
  request has tools.
* ``completion_tokens`` = ``T(reply text) + Σ over tool calls of T(name) + T(arguments)``.
* ``total_tokens`` = the sum. A step's ``reply.usage`` overrides any of these (and may add
  ``prompt_tokens_details`` / ``completion_tokens_details``); embeddings report
  ``prompt_tokens`` = Σ T(input) (or the token-array lengths).

:func:`count_tokens`, :func:`count_prompt_tokens` and :func:`count_completion_tokens`
implement exactly this.

Script schema (YAML or JSON file, or a dict)
--------------------------------------------
.. code-block:: yaml

    models: [scripted-model]   # served by /v1/models; "*" in the list (or models: "*")
                               # accepts any model name. Default: [scripted-model]
    api_key: null              # if set, requests need "Authorization: Bearer <api_key>"
    embedding_dimensions: 384  # default vector size for /v1/embeddings
    defaults:                  # defaults for every reply
      chunk_size: 8            # characters per streamed text or arguments piece (>= 1)
      delay_s: 0               # seconds before each streamed chunk after the first
      first_delay_s: 0         # seconds before the first chunk (time to first token)
    steps:
      - name: greeting         # optional; shown by remaining_steps() and in errors
        match:                 # every key optional; all given keys must fit
          user: "hello"        # substring of the last user message, or "/regex/" (search)
          system: "/summar/"   # same, over the system messages
          tool_results: true   # true: the request ends with tool results (role "tool");
                               # false: it does not
          tool: read_file      # one of those trailing tool results answers a call to
                               # this tool (names found via tool_call_id)
          model: scripted-model
          stream: true         # streaming request or not
        times: 1               # requests this step answers; default 1; "*" = unlimited
        reply:
          text: "Hello"
          tool_calls:          # parallel calls; index = position in this list
            - {id: call_1, name: read_file, arguments: {path: a.py}}  # id optional
            - {name: grep, arguments: '{"pattern": '}   # a string is sent verbatim
          finish_reason: stop  # default: tool_calls if there are calls, else stop
          usage: {prompt_tokens: 10, completion_tokens: 2}   # optional override
          chunk_size: 4        # per-reply overrides of defaults
          delay_s: 0.01
          first_delay_s: 0.2
          interleave_tool_calls: false   # true: argument pieces of parallel calls alternate
        drop_after: 3          # optional, with reply: send 3 SSE events, then cut the
                               # connection (no [DONE], no terminating chunk). 0 = cut
                               # right after the headers; the first event is the role.
                               # A non-streaming request gets half its body, then the cut.
      - match: {user: "busy"}
        error:                 # instead of reply
          status: 429
          body: {error: {message: "Slow down", type: requests, param: null,
                         code: rate_limit_exceeded}}   # or a string sent verbatim;
                               # omitted: OpenAI's usual body for that status
          headers: {Retry-After: "1"}
          delay_s: 0           # before answering

Steps are tried in order; the first one with uses left whose ``match`` fits answers.
Validation happens on load and raises :class:`ScriptError` naming the file, the step and
the problem (unknown keys get a "did you mean" hint).

Python API
----------
.. code-block:: python

    with ReplayServer({"steps": [{"reply": {"text": "hi"}}]}) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        ...
        assert server.remaining_steps() == []
        assert server.requests[0].headers["authorization"] == "<redacted>"

Command line: ``python -m agentls.devtools.replay --script FILE --port N [--host H]``.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import difflib
import hashlib
import hmac
import json
import logging
import math
import re
import signal
import socket
import socketserver
import struct
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn

import yaml

__all__ = [
    "RecordedRequest",
    "RemainingStep",
    "ReplayServer",
    "Script",
    "ScriptError",
    "count_completion_tokens",
    "count_prompt_tokens",
    "count_tokens",
    "embed_text",
    "last_user_text",
    "load_script",
    "main",
]

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "scripted-model"
DEFAULT_EMBEDDING_DIMENSIONS = 384
FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})
REDACTED = "<redacted>"
_SECRET_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "proxy-authorization"})
_TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD = re.compile(r"\w+")


# --------------------------------------------------------------------------- tokens


def count_tokens(text: str) -> int:
    """Tokens of ``text`` by the documented rule: matches of ``\\w+|[^\\w\\s]``."""
    return sum(1 for _ in _TOKEN.finditer(text))


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _tool_call_parts(message: Mapping[str, Any]) -> list[tuple[str, str]]:
    calls = message.get("tool_calls")
    parts: list[tuple[str, str]] = []
    if not isinstance(calls, list):
        return parts
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            parts.append((str(function.get("name") or ""), str(function.get("arguments") or "")))
    return parts


def count_prompt_tokens(messages: Sequence[Any], tools: Any = None) -> int:
    """``prompt_tokens`` of a chat request by the rule in the module docstring."""
    total = 0
    for message in messages:
        if not isinstance(message, dict):
            continue
        total += 4 + count_tokens(_content_text(message.get("content")))
        total += sum(count_tokens(n) + count_tokens(a) for n, a in _tool_call_parts(message))
    if tools:
        total += count_tokens(json.dumps(tools))
    return total


def count_completion_tokens(text: str, tool_calls: Sequence[tuple[str, str]] = ()) -> int:
    """``completion_tokens`` of a reply: its text plus each call's (name, arguments)."""
    return count_tokens(text) + sum(count_tokens(n) + count_tokens(a) for n, a in tool_calls)


def embed_text(text: str, dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS) -> list[float]:
    """A deterministic, L2-normalised bag-of-words vector (feature hashing with signs)."""
    vector = [0.0] * dimensions
    for token in _WORD.findall(text.lower()) or [text]:
        bucket = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "big")
        vector[bucket % dimensions] += -1.0 if bucket >> 63 else 1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:  # colliding tokens with opposite signs cancelled out
        vector[0], norm = 1.0, 1.0
    return [v / norm for v in vector]


# --------------------------------------------------------------------------- script


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


@dataclass(frozen=True)
class ScriptedToolCall:
    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    text: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Mapping[str, Any] | None = None
    chunk_size: int = 8
    delay_s: float = 0.0
    first_delay_s: float = 0.0
    interleave_tool_calls: bool = False


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


def _pattern(value: Any, where: str) -> TextPattern:
    text = _str(value, where)
    if len(text) >= 2 and text.startswith("/") and text.endswith("/"):
        try:
            return TextPattern(text, re.compile(text[1:-1]))
        except re.error as exc:
            _fail(where, f"invalid regular expression {text!r}: {exc}")
    return TextPattern(text, None)


_MATCH_KEYS = frozenset({"user", "system", "tool_results", "tool", "model", "stream"})
_REPLY_KEYS = frozenset(
    {"text", "tool_calls", "finish_reason", "usage", "chunk_size", "delay_s", "first_delay_s",
     "interleave_tool_calls"}
)
_DEFAULT_KEYS = frozenset({"chunk_size", "delay_s", "first_delay_s"})
_USAGE_KEYS = frozenset(
    {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details",
     "completion_tokens_details"}
)
_STEP_KEYS = frozenset({"name", "match", "times", "reply", "error", "drop_after"})
_TOP_KEYS = frozenset({"models", "api_key", "embedding_dimensions", "defaults", "steps"})


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
    )


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
    )


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it (secret headers redacted, names lower-case)."""

    method: str
    path: str
    body: Any  # parsed JSON; the raw text when it was not JSON; None when empty
    headers: dict[str, str]
    time: float
    status: int  # the status answered (200 for a dropped stream)
    step: int | None  # index of the script step that answered, if one did
    connection: int  # sequence number of the TCP connection (keep-alive shows as reuse)

    @property
    def last_user_message(self) -> str:
        messages = self.body.get("messages") if isinstance(self.body, dict) else None
        return last_user_text(messages if isinstance(messages, list) else [])


@dataclass(frozen=True)
class RemainingStep:
    index: int
    name: str | None
    uses_left: int


def last_user_text(messages: Sequence[Any]) -> str:
    """Text of the last message with role ``user`` ("" when there is none)."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


@dataclass(frozen=True)
class _ChatView:
    """What a step's ``match`` looks at."""

    model: str
    stream: bool
    user: str
    system: str
    ends_with_tool_results: bool
    trailing_tools: frozenset[str]

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> _ChatView:
        messages = [m for m in body["messages"] if isinstance(m, dict)]
        names_by_id = {
            call.get("id"): (call.get("function") or {}).get("name")
            for m in messages
            if isinstance(m.get("tool_calls"), list)
            for call in m["tool_calls"]
            if isinstance(call, dict)
        }
        trailing: set[str] = set()
        for message in reversed(messages):
            if message.get("role") != "tool":
                break
            name = names_by_id.get(message.get("tool_call_id")) or message.get("name")
            if isinstance(name, str):
                trailing.add(name)
        return cls(
            model=str(body.get("model")),
            stream=bool(body.get("stream")),
            user=last_user_text(messages),
            system="\n".join(
                _content_text(m.get("content")) for m in messages if m.get("role") == "system"
            ),
            ends_with_tool_results=bool(messages) and messages[-1].get("role") == "tool",
            trailing_tools=frozenset(trailing),
        )

    def fits(self, match: StepMatch) -> bool:
        return (
            (match.user is None or match.user.matches(self.user))
            and (match.system is None or match.system.matches(self.system))
            and (match.tool_results is None or match.tool_results == self.ends_with_tool_results)
            and (match.tool is None or match.tool in self.trailing_tools)
            and (match.model is None or match.model == self.model)
            and (match.stream is None or match.stream == self.stream)
        )


# --------------------------------------------------------------------------- answers


@dataclass
class _Answer:
    """A complete HTTP response; ``cut_after_bytes`` cuts the body short (dropped reply)."""

    status: int
    body: bytes
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str = "application/json"
    delay_s: float = 0.0
    cut_after_bytes: int | None = None


@dataclass
class _StreamAnswer:
    events: list[bytes]
    first_delay_s: float
    delay_s: float
    drop_after: int | None


def _json_bytes(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def _error_body(message: str, type_: str, code: str | None = None, param: str | None = None
                ) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _error(status: int, message: str, type_: str = "invalid_request_error",
           code: str | None = None, param: str | None = None) -> _Answer:
    return _Answer(status, _json_bytes(_error_body(message, type_, code, param)))


_DEFAULT_ERRORS: dict[int, tuple[str, str, str | None]] = {
    400: ("Bad request (scripted error).", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to sample from this model.", "invalid_request_error", None),
    404: ("The model does not exist or you do not have access to it.",
          "invalid_request_error", "model_not_found"),
    429: ("Rate limit reached for requests (scripted error).", "requests",
          "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!",
          "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}


def _scripted_error(error: ScriptedError) -> _Answer:
    headers = list(error.headers)
    content_type = "application/json"
    if error.body is None:
        message, type_, code = _DEFAULT_ERRORS.get(
            error.status, (f"HTTP {error.status} (scripted error).", "server_error", None)
        )
        body = _json_bytes(_error_body(message, type_, code))
    elif isinstance(error.body, str):
        body = error.body.encode()
        try:
            json.loads(error.body)
        except ValueError:
            content_type = "text/plain; charset=utf-8"
    else:
        body = _json_bytes(error.body)
    given = [v for k, v in headers if k.lower() == "content-type"]
    headers = [(k, v) for k, v in headers if k.lower() != "content-type"]
    return _Answer(error.status, body, headers, given[0] if given else content_type, error.delay_s)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def _stream_deltas(reply: Reply, call_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The ``delta`` objects of a streamed reply, in order, before the finishing delta."""
    deltas: list[dict[str, Any]] = []
    if reply.text or not reply.tool_calls:
        deltas.append({"role": "assistant", "content": "", "refusal": None})
        deltas.extend({"content": piece} for piece in _pieces(reply.text, reply.chunk_size))
    per_call: list[list[dict[str, Any]]] = []
    for index, (call, call_id) in enumerate(zip(reply.tool_calls, call_ids, strict=True)):
        header = {"index": index, "id": call_id, "type": "function",
                  "function": {"name": call.name, "arguments": ""}}
        pieces = [{"index": index, "function": {"arguments": piece}}
                  for piece in _pieces(call.arguments, reply.chunk_size)]
        per_call.append([header, *pieces])
    if reply.interleave_tool_calls:
        longest = max((len(c) for c in per_call), default=0)
        ordered = [c[i] for i in range(longest) for c in per_call if i < len(c)]
    else:
        ordered = [d for c in per_call for d in c]
    for tool_delta in ordered:
        if deltas:
            deltas.append({"tool_calls": [tool_delta]})
        else:  # a reply with only tool calls: the role rides on the first call
            deltas.append({"role": "assistant", "content": None, "refusal": None,
                           "tool_calls": [tool_delta]})
    return deltas


# --------------------------------------------------------------------------- server


class ReplayServer:
    """The scripted model server on a background thread (see the module docstring)."""

    def __init__(
        self,
        script: Script | Mapping[str, Any] | str | Path,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._lock = threading.Lock()
        self._script = load_script(script)
        self._uses = [0] * len(self._script.steps)
        self._requests: list[RecordedRequest] = []
        self._host, self._port = host, port
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._counter = 0
        self._created = int(time.time())

    # lifecycle ---------------------------------------------------------------

    def start(self) -> ReplayServer:
        if self._httpd is not None:
            raise RuntimeError("the scripted model server was already started")
        self._httpd = _HTTPServer((self._host, self._port), self)
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
            name=f"replay-server-{self._port}", daemon=True,
        )
        self._thread.start()
        logger.debug("scripted model server listening on %s", self.base_url)
        return self

    def stop(self) -> None:
        httpd = self._httpd
        if httpd is None or self._stopping.is_set():
            return
        self._stopping.set()  # wakes handlers sleeping through scripted delays
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def serve_forever(self) -> None:
        """Serve (starting if needed) until :meth:`stop` or KeyboardInterrupt."""
        if self._httpd is None:
            self.start()
        try:
            while not self._stopping.wait(0.5):
                pass
        finally:
            self.stop()

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # state -------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("start() the scripted model server before asking for its URL")
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}/v1"

    @property
    def script(self) -> Script:
        return self._script

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def load(self, script: Script | Mapping[str, Any] | str | Path) -> None:
        """Replace the script; step counters start again (recorded requests are kept)."""
        loaded = load_script(script)
        with self._lock:
            self._script, self._uses = loaded, [0] * len(loaded.steps)

    def remaining_steps(self) -> list[RemainingStep]:
        """Steps with a finite ``times`` that still have uses left ("*" steps never count)."""
        with self._lock:
            return [
                RemainingStep(step.index, step.name, step.times - used)
                for step, used in zip(self._script.steps, self._uses, strict=True)
                if step.times is not None and used < step.times
            ]

    # answering (called from handler threads) ----------------------------------

    def _next_number(self) -> int:
        with self._lock:
            self._counter += 1
            return self._counter

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _select(self, view: _ChatView) -> tuple[Script, Step | None]:
        with self._lock:
            script = self._script
            for i, step in enumerate(script.steps):
                if (step.times is None or self._uses[i] < step.times) and view.fits(step.match):
                    self._uses[i] += 1
                    return script, step
            return script, None

    def _answer(self, method: str, path: str, headers: Mapping[str, str], body: Any
                ) -> tuple[_Answer | _StreamAnswer, int | None]:
        """The response to one request and the index of the step that produced it."""
        script = self._script
        route = (method, path.rstrip("/"))
        known = route in {("POST", "/v1/chat/completions"), ("POST", "/v1/embeddings"),
                          ("GET", "/v1/models")} or (
            method == "GET" and path.startswith("/v1/models/"))
        if not known:
            return _error(404, f"Invalid URL ({method} {path})"), None
        if script.api_key is not None:
            denied = self._check_key(script.api_key, headers.get("authorization", ""))
            if denied is not None:
                return denied, None
        if route == ("GET", "/v1/models"):
            data = [self._model_object(m) for m in script.models]
            return _Answer(200, _json_bytes({"object": "list", "data": data})), None
        if method == "GET":
            model = path[len("/v1/models/"):]
            if not self._model_allowed(script, model):
                return self._model_not_found(model), None
            return _Answer(200, _json_bytes(self._model_object(model))), None
        if not isinstance(body, dict):
            return _error(400, "We could not parse the JSON body of your request. (HINT: This "
                          "likely means you aren't using your HTTP library correctly. The OpenAI "
                          "API expects a JSON payload.)"), None
        requested = body.get("model")
        if not isinstance(requested, str) or not requested:
            return _error(400, "you must provide a model parameter"), None
        if not self._model_allowed(script, requested):
            return self._model_not_found(requested), None
        if path.rstrip("/") == "/v1/embeddings":
            return self._embeddings(script, body), None
        return self._chat(body)

    @staticmethod
    def _check_key(expected: str, authorization: str) -> _Answer | None:
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return _error(401, "You didn't provide an API key. You need to provide your API key "
                          "in an Authorization header using Bearer auth (i.e. Authorization: "
                          "Bearer YOUR_KEY).")
        if not hmac.compare_digest(given.strip().encode(), expected.encode()):
            return _error(401, "Incorrect API key provided. You can find your API key at "
                          "https://platform.openai.com/account/api-keys.",
                          code="invalid_api_key")
        return None

    @staticmethod
    def _model_allowed(script: Script, model: str) -> bool:
        return script.any_model or model in script.models

    @staticmethod
    def _model_not_found(model: str) -> _Answer:
        return _error(404, f"The model `{model}` does not exist or you do not have access to it.",
                      code="model_not_found")

    def _model_object(self, model: str) -> dict[str, Any]:
        return {"id": model, "object": "model", "created": self._created, "owned_by": "scripted"}

    def _embeddings(self, script: Script, body: Mapping[str, Any]) -> _Answer:
        raw = body.get("input")
        if isinstance(raw, str) or (
            isinstance(raw, list) and raw and all(isinstance(t, int) for t in raw)
        ):
            raw = [raw]
        if not isinstance(raw, list) or not raw:
            return _error(400, "'input' must be a non-empty string or array", param="input")
        dimensions = body.get("dimensions") or script.embedding_dimensions
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
            return _error(400, f"Invalid 'dimensions': {dimensions!r}", param="dimensions")
        data, tokens = [], 0
        for index, item in enumerate(raw):
            if isinstance(item, list):
                text, tokens = " ".join(f"t{t}" for t in item), tokens + len(item)
            elif isinstance(item, str):
                text, tokens = item, tokens + count_tokens(item)
            else:
                return _error(400, f"Invalid 'input[{index}]': expected a string or token "
                              "array", param="input")
            vector = embed_text(text, dimensions)
            encoded: Any = vector
            if body.get("encoding_format") == "base64":
                encoded = base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        payload = {"object": "list", "data": data, "model": body["model"], "usage": usage}
        return _Answer(200, _json_bytes(payload))

    def _chat(self, body: Mapping[str, Any]) -> tuple[_Answer | _StreamAnswer, int | None]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _error(400, "Missing required parameter: 'messages'.", param="messages",
                          code="missing_required_parameter"), None
        view = _ChatView.of(body)
        script, step = self._select(view)
        if step is None:
            shown = view.user if len(view.user) <= 200 else view.user[:200] + "…"
            return _error(500, "scripted model: no script step matches this request "
                          f"(last user message: {shown!r}; script {script.source})",
                          type_="server_error", code="no_matching_step"), None
        if step.error is not None:
            return _scripted_error(step.error), step.index
        assert step.reply is not None  # validated on load: a step has a reply or an error
        return self._reply(step, step.reply, body, view), step.index

    def _reply(self, step: Step, reply: Reply, body: Mapping[str, Any], view: _ChatView
               ) -> _Answer | _StreamAnswer:
        number = self._next_number()
        call_ids = [c.id or f"call_{number}_{i}" for i, c in enumerate(reply.tool_calls)]
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        usage: dict[str, Any] = {
            "prompt_tokens": count_prompt_tokens(body["messages"], body.get("tools")),
            "completion_tokens": count_completion_tokens(
                reply.text, [(c.name, c.arguments) for c in reply.tool_calls]),
        }
        usage.update(reply.usage or {})
        if "total_tokens" not in (reply.usage or {}):
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        common = {"id": f"chatcmpl-scripted{number:08d}", "created": int(time.time()),
                  "model": view.model, "system_fingerprint": "fp_scripted"}
        if not view.stream:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": reply.text if reply.text or not reply.tool_calls else None,
                "refusal": None,
            }
            if reply.tool_calls:
                message["tool_calls"] = [
                    {"id": cid, "type": "function",
                     "function": {"name": c.name, "arguments": c.arguments}}
                    for c, cid in zip(reply.tool_calls, call_ids, strict=True)
                ]
            payload = {**common, "object": "chat.completion", "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            ], "usage": usage}
            data = _json_bytes(payload)
            cut = len(data) // 2 if step.drop_after is not None else None
            return _Answer(200, data, delay_s=reply.first_delay_s, cut_after_bytes=cut)
        options = body.get("stream_options")
        with_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        chunks: list[dict[str, Any]] = [
            {**common, "object": "chat.completion.chunk", "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]}
            for delta in _stream_deltas(reply, call_ids)
        ]
        chunks.append({**common, "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}]})
        if with_usage:
            for chunk in chunks:
                chunk["usage"] = None
            chunks.append({**common, "object": "chat.completion.chunk", "choices": [],
                           "usage": usage})
        events = [b"data: " + _json_bytes(c) + b"\n\n" for c in chunks]
        events.append(b"data: [DONE]\n\n")
        return _StreamAnswer(events, reply.first_delay_s, reply.delay_s, step.drop_after)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], app: ReplayServer) -> None:
        self.app = app
        self._connections: dict[socket.socket, int] = {}
        self._connections_lock = threading.Lock()
        self._connection_count = 0
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls getfqdn(), a DNS lookup that can stall without network
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]

    def track(self, connection: socket.socket) -> int:
        with self._connections_lock:
            self._connection_count += 1
            self._connections[connection] = self._connection_count
            return self._connection_count

    def untrack(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._connections.pop(connection, None)

    def close_connections(self) -> None:
        """Shut open keep-alive connections so their handler threads end."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            logger.debug("client %s went away: %r", client_address, exc)
        else:
            logger.exception("scripted model server: error while serving %s", client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "agentls-replay/1"
    sys_version = ""
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes: without this, Nagle + delayed ACK
        # stall every response by ~40 ms
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connection_number = self.server.track(self.connection)

    def finish(self) -> None:
        self.server.untrack(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s - " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                data += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return bytes(data)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _serve(self) -> None:
        app = self.server.app
        path = self.path.split("?", 1)[0]
        self.response_started = False
        try:
            raw = self._read_body()
            text = raw.decode("utf-8", errors="replace")
            body: Any = None
            if text.strip():
                try:
                    body = json.loads(text)
                except ValueError:
                    body = text
            headers = {k.lower(): v for k, v in self.headers.items()}
            answer, step = app._answer(self.command, path, headers, body)
            redacted = {k: REDACTED if k in _SECRET_HEADERS else v for k, v in headers.items()}
            status = answer.status if isinstance(answer, _Answer) else 200
            app._record(RecordedRequest(self.command, path, body, redacted, time.time(), status,
                                        step, self.connection_number))
            if isinstance(answer, _StreamAnswer):
                self._write_stream(answer)
            else:
                self._write(answer)
        except (ConnectionError, TimeoutError) as exc:
            logger.debug("client went away during %s %s: %r", self.command, path, exc)
            self.close_connection = True
        except OSError as exc:  # the socket was shut by stop()
            logger.debug("connection closed during %s %s: %r", self.command, path, exc)
            self.close_connection = True
        except Exception:  # a bug here must fail the test loudly, not hang the client
            logger.exception("scripted model server: failed to answer %s %s", self.command, path)
            self.close_connection = True
            if not self.response_started:
                with contextlib.suppress(OSError):
                    self._write(_error(500, "scripted model server bug: see its log",
                                       type_="server_error"))

    def _wait(self, seconds: float) -> bool:
        """Sleep without holding up stop(); False when the server is stopping."""
        return seconds <= 0 or not self.server.app._stopping.wait(seconds)

    def _start(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.response_started = True
        self.send_response(status)
        self.send_header("x-request-id", f"req_scripted{self.server.app._next_number():08d}")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()

    def _write(self, answer: _Answer) -> None:
        if not self._wait(answer.delay_s):
            return self._cut()
        self._start(answer.status, [("Content-Type", answer.content_type),
                                    ("Content-Length", str(len(answer.body))), *answer.headers])
        if answer.cut_after_bytes is None:
            self.wfile.write(answer.body)
        else:
            self.wfile.write(answer.body[:answer.cut_after_bytes])
            self._cut()

    def _write_stream(self, answer: _StreamAnswer) -> None:
        self._start(200, [("Content-Type", "text/event-stream; charset=utf-8"),
                          ("Cache-Control", "no-cache"), ("Transfer-Encoding", "chunked")])
        for sent, event in enumerate(answer.events):
            if sent == answer.drop_after:
                return self._cut()
            if not self._wait(answer.first_delay_s if sent == 0 else answer.delay_s):
                return self._cut()
            frame = b"%x\r\n%s\r\n" % (len(event), event)
            if sent == len(answer.events) - 1 and answer.drop_after is None:
                frame += b"0\r\n\r\n"  # end of body in the same write as [DONE]
            self.wfile.write(frame)
        if answer.drop_after is not None:  # asked to drop after at least every event
            self._cut()

    def _cut(self) -> None:
        """End the connection mid-response: the client sees an incomplete body."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    """``agentls replay --script FILE --port N [--host H]``: serve until Ctrl-C."""
    parser = argparse.ArgumentParser(
        prog="agentls replay",
        description="Serve a scripted OpenAI-compatible model (not a real model) for tests "
                    "and demos.",
    )
    parser.add_argument("--script", required=True, type=Path, help="YAML or JSON script file")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="interface (default: 127.0.0.1)")
    args = parser.parse_args(argv)
    try:
        server = ReplayServer(args.script, host=args.host, port=args.port)
        server.start()
    except ScriptError as exc:
        print(f"agentls replay: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"agentls replay: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
              " (is another server using that port? try --port 0)", file=sys.stderr)
        return 1
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop cleanly on kill too
    print(f"scripted model server (not a real model) listening on {server.base_url}",
          file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
