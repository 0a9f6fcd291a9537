"""Token estimates: the character rule, tiktoken only offline, memoisation, calibration."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from agentls.devtools.replay.command import ReplayServer
from agentls.engine.prompt import tokens
from agentls.engine.prompt.tokens import (
    MAX_RATIO,
    MESSAGE_OVERHEAD,
    MIN_RATIO,
    TokenEstimator,
    char_estimate,
)
from agentls.llm.messages import ChatRequest, Message, ToolCall, ToolSpec
from agentls.llm.openai_compat import OpenAICompatBackend
from agentls.settings.config import BackendConfig

KEY = ("scripted", "scripted-model")

READ_TOOL = ToolSpec(
    "read_file",
    "Read a text file of the workspace, optionally a range of lines.",
    {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path relative to the workspace root."},
            "start_line": {"type": "integer", "minimum": 1},
            "end_line": {"type": "integer", "minimum": 1},
        },
        "required": ["path"],
    },
)

CODE_A = '''\
def parse_config(path: Path) -> dict[str, Any]:
    """Read a TOML file and merge it over the defaults."""
    with path.open("rb") as handle:
        data = tomllib.load(handle)
    merged = dict(DEFAULTS)
    for key, value in data.items():
        if key not in DEFAULTS:
            raise ConfigError(f"unknown key {key!r} in {path}")
        merged[key] = value
    return merged


class Cache:
    def __init__(self, limit: int = 128) -> None:
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self.limit = limit

    def get(self, key: str) -> bytes | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value
'''

CODE_B = '''\
export async function fetchUsers(api: ApiClient, page = 1): Promise<User[]> {
  const response = await api.get(`/users?page=${page}&limit=50`);
  if (!response.ok) {
    throw new HttpError(response.status, await response.text());
  }
  const body = (await response.json()) as { users: RawUser[]; next?: number };
  return body.users.map((raw) => ({
    id: raw.id,
    name: `${raw.first_name} ${raw.last_name}`.trim(),
    email: raw.email?.toLowerCase() ?? null,
    createdAt: new Date(raw.created_at),
  }));
}

for (const user of await fetchUsers(client)) {
  console.log(user.name, user.email);
}
'''

PROSE_A = (
    "The configuration loader reads the project file and then merges it over the defaults. "
    "When a person mistypes a key, we want a clear error that names the file and the key, "
    "instead of silently ignoring it. Could you check whether the cache class evicts the "
    "least recently used entry first, and tell me what happens when the limit is zero?"
)

PROSE_B = (
    "I am refactoring the user listing page of our dashboard. The request helper should "
    "normalise e-mail addresses and build full names, and errors from the server have to "
    "surface with their status code so the page can show a friendly message. Please review "
    "the function below, point out anything fragile, and suggest a version that pages "
    "through every result rather than only the first fifty users."
)


def conversation(prose: str, code: str, path: str) -> list[Message]:
    call = ToolCall("call_1", "read_file", json.dumps({"path": path}))
    return [
        Message.system("You are a careful coding assistant. Read files before editing them."),
        Message.user(prose),
        Message.assistant("Let me read the file first.", [call]),
        Message.tool("call_1", json.dumps({"ok": True, "path": path, "content": code})),
        Message.assistant(
            f"I read `{path}`. The main function is short; the error handling is the part "
            "that needs attention, because failures are reported without enough context."
        ),
        Message.user("Thanks. Go ahead and make the change, and keep the public names."),
    ]


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer({"steps": [{"reply": {"text": "ok"}, "times": "*"}]}) as running:
        yield running


async def reported_prompt_tokens(
    server: ReplayServer, messages: list[Message], tools: list[ToolSpec]
) -> int:
    backend = OpenAICompatBackend(
        "scripted", BackendConfig(base_url=server.base_url, model="scripted-model"),
        api_key="sk-test",
    )
    try:
        response = await backend.complete(ChatRequest(messages, tools), use_cache=False)
    finally:
        await backend.aclose()
    return response.usage.prompt_tokens


@pytest.mark.parametrize(
    ("calibrate_on", "check_on"),
    [
        ((PROSE_A, CODE_A, "config.py"), (PROSE_B, CODE_B, "users.ts")),
        ((PROSE_B, CODE_B, "users.ts"), (PROSE_A, CODE_A, "config.py")),
    ],
)
async def test_one_calibration_brings_the_estimate_within_10_percent_of_the_server(
    server: ReplayServer, calibrate_on: tuple[str, str, str], check_on: tuple[str, str, str]
) -> None:
    estimator = TokenEstimator()
    tools = [READ_TOOL]
    first = conversation(*calibrate_on)
    estimator.observe(
        KEY, estimator.raw_estimate(first, tools),
        await reported_prompt_tokens(server, first, tools),
    )

    second = conversation(*check_on)
    estimate = estimator.estimate_messages(KEY, second, tools)
    reported = await reported_prompt_tokens(server, second, tools)

    assert abs(estimate - reported) / reported < 0.10, (estimate, reported)


async def test_the_estimate_converges_over_several_observations(server: ReplayServer) -> None:
    estimator = TokenEstimator(smoothing=0.5)
    tools = [READ_TOOL]
    samples = [
        conversation(PROSE_A, CODE_A, "config.py"),
        conversation(PROSE_B, CODE_B, "users.ts"),
        conversation(PROSE_A + " " + PROSE_B, CODE_B + CODE_A, "both.txt"),
    ]
    errors: list[float] = []
    for messages in samples * 2:
        reported = await reported_prompt_tokens(server, messages, tools)
        errors.append(abs(estimator.estimate_messages(KEY, messages, tools) / reported - 1))
        estimator.observe_request(KEY, messages, tools, reported)
    assert max(errors[1:]) < 0.10


def test_code_counts_more_tokens_per_character_than_prose() -> None:
    prose, code = PROSE_A, CODE_A[: len(PROSE_A)]
    assert len(prose) == len(code)
    assert char_estimate(code) > 1.15 * char_estimate(prose)
    assert 3.5 < len(prose) / char_estimate(prose) < 6  # about four characters per token


def test_character_rule_counts_symbols_and_non_ascii_characters_once() -> None:
    assert char_estimate("") == 0
    assert char_estimate("    \n\t ") == 0
    assert char_estimate("abcd") == 1 and char_estimate("abcde") == 2
    assert char_estimate("snake_case") == 3  # underscores belong to identifiers
    assert char_estimate("a(b)") == 1 + 2  # two letters round up to a token, then ( and )
    assert char_estimate("日本語") == 3
    assert char_estimate("é") == 1


def test_messages_count_overheads_and_tool_calls() -> None:
    estimator = TokenEstimator(use_tiktoken=False)
    empty = Message.assistant(None)
    call = Message.assistant(None, [ToolCall("c1", "grep", '{"pattern": "x"}')])
    assert estimator.message_tokens(empty) == MESSAGE_OVERHEAD
    assert estimator.message_tokens(call) > MESSAGE_OVERHEAD + char_estimate('{"pattern": "x"}')


def test_raw_counts_are_memoised_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    estimator = TokenEstimator(use_tiktoken=False)
    counted: list[str] = []
    real = estimator.count_text

    def counting(text: str) -> int:
        counted.append(text)
        return real(text)

    monkeypatch.setattr(estimator, "count_text", counting)
    history = conversation(PROSE_A, CODE_A, "config.py")
    first = estimator.raw_estimate(history, [READ_TOOL])
    calls = len(counted)
    again = [Message(m.role, m.content, m.tool_calls, m.tool_call_id, m.name) for m in history]
    assert estimator.raw_estimate(again, [READ_TOOL]) == first
    assert len(counted) == calls  # equal messages and schemas hit the cache
    estimator.raw_estimate([*history, Message.user("one more")], [READ_TOOL])
    assert counted[calls:] == ["one more"]


def test_calibration_is_per_backend_and_model_smoothed_and_clamped() -> None:
    estimator = TokenEstimator(use_tiktoken=False, smoothing=0.5)
    other = ("ollama", "qwen2.5-coder")
    assert estimator.ratio(KEY) == 1.0
    assert estimator.observe(KEY, 100, 150) == 1.5  # the first report is taken as it is
    assert estimator.observe(KEY, 100, 250) == 2.0  # then smoothed: 1.5 + 0.5 * (2.5 - 1.5)
    assert estimator.ratio(other) == 1.0 and estimator.observations(KEY) == 2
    assert estimator.scale(KEY, 10) == 20

    assert estimator.observe(other, 100, 0) == 1.0  # no usage reported: nothing learnt
    assert estimator.observations(other) == 0
    assert estimator.observe(other, 10, 1_000) == MAX_RATIO
    assert estimator.observe(("x", "y"), 1_000, 1) == MIN_RATIO


# --- tiktoken, only when it works offline -----------------------------------------------------


@pytest.fixture
def fresh_decision() -> Iterator[None]:
    tokens.forget_offline_encoding()
    yield
    tokens.forget_offline_encoding()


class FakeEncoding:
    def encode_ordinary(self, text: str) -> list[int]:
        return list(range(len(text.split())))


def fake_tiktoken(monkeypatch: pytest.MonkeyPatch, cached: set[str]) -> list[str]:
    """A stand-in tiktoken whose encodings load through ``load.read_file`` like the real one:
    from a local cache file when present, else by downloading a URL."""
    fetched: list[str] = []
    load: Any = types.ModuleType("tiktoken.load")

    def read_file(blobpath: str) -> bytes:
        fetched.append(blobpath)
        return b"downloaded"

    def get_encoding(name: str) -> FakeEncoding:
        blob = f"/cache/{name}" if name in cached else f"https://example.invalid/{name}.tiktoken"
        load.read_file(blob)
        return FakeEncoding()

    load.read_file = read_file
    package: Any = types.ModuleType("tiktoken")
    package.load = load
    package.get_encoding = get_encoding
    monkeypatch.setitem(sys.modules, "tiktoken", package)
    monkeypatch.setitem(sys.modules, "tiktoken.load", load)
    return fetched


def test_without_tiktoken_the_character_rule_is_used(
    monkeypatch: pytest.MonkeyPatch, fresh_decision: None
) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import fails
    estimator = TokenEstimator()
    assert estimator.method == "chars"
    assert estimator.count_text("hello, world") == char_estimate("hello, world")


def test_tiktoken_never_downloads_and_the_decision_is_kept(
    monkeypatch: pytest.MonkeyPatch, fresh_decision: None
) -> None:
    fetched = fake_tiktoken(monkeypatch, cached=set())
    assert TokenEstimator().method == "chars"
    assert fetched == []  # the URL was refused before reaching the real read_file
    assert sys.modules["tiktoken.load"].read_file.__name__ == "read_file"  # restored

    fake_tiktoken(monkeypatch, cached={"cl100k_base"})
    assert TokenEstimator().method == "chars"  # decided once per process


def test_tiktoken_is_used_when_its_encoding_is_on_disk(
    monkeypatch: pytest.MonkeyPatch, fresh_decision: None
) -> None:
    fetched = fake_tiktoken(monkeypatch, cached={"cl100k_base"})
    estimator = TokenEstimator()
    assert estimator.method == "tiktoken"
    assert fetched == ["/cache/cl100k_base"]  # o200k_base was refused, cl100k_base loaded
    assert estimator.count_text("three small words") == 3
    assert TokenEstimator(use_tiktoken=False).method == "chars"
