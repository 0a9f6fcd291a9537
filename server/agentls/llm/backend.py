"""What every backend offers, and the one error type every backend failure becomes."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from agentls.llm.messages import ChatChunk, ChatRequest, ChatResponse
from agentls.policy.redaction import redact

ErrorKind = Literal[
    "rate_limit",
    "context_too_long",
    "model_not_found",
    "auth",
    "timeout",
    "server_error",
    "connection",
    "bad_request",
    "tools_unsupported",  # the model or its server takes no tools (Ollama, llama.cpp, vLLM)
    "tool_calls_unread",  # the model wrote a tool call as text that could not be read
]

RETRYABLE_KINDS: frozenset[str] = frozenset({"rate_limit", "server_error", "timeout", "connection"})

# What a person should do next, per kind; front-ends show it under the server's own message.
HINTS: dict[str, str] = {
    "rate_limit": "the provider is rate limiting; wait a minute or lower the request rate",
    "context_too_long": "the conversation is too long for the model; start a new session "
    "or compact it",
    "model_not_found": "check the model name (`agentls config get backends.<name>.model`) and "
    "that the server serves it",
    "auth": "set the API key in the environment variable the backend names "
    "(`api_key_env`, default OPENAI_API_KEY)",
    "timeout": "the server did not answer in time; raise `backends.<name>.timeout` or try again",
    "server_error": "the model server failed; try again later",
    "connection": "check that the server is running and `base_url` is right",
    "bad_request": "the server refused the request as malformed; see its message",
    "tools_unsupported": "the model or its server takes no tools: use a model with tool "
    "support, start the server with tool calling on (llama.cpp: --jinja; vLLM: "
    "--enable-auto-tool-choice --tool-call-parser NAME), set `backends.<name>.tool_calls = "
    '"text"` (the tools described in the prompt), or use the `ask` mode (no tools)',
    "tool_calls_unread": "the server did not parse the model's tool calls: start it with its "
    "tool parser (llama.cpp: --jinja; vLLM: --enable-auto-tool-choice --tool-call-parser "
    'NAME; Ollama: a model with tools), or set `backends.<name>.tool_calls = "text"`',
}


# What servers say when they take no tools: Ollama (400 "<model> does not support tools",
# server/routes.go), llama.cpp without --jinja (500 "tools param requires --jinja flag",
# tools/server/utils.hpp), vLLM without a tool parser (400 '"auto" tool choice requires
# --enable-auto-tool-choice and --tool-call-parser to be set'), OpenRouter ("No endpoints
# found that support tool use").
# The patterns of error bodies are strings, compiled by ``re`` (and kept in its cache) when a
# server first answers with an error: a run's start never needs them.
_TOOLS_UNSUPPORTED = (
    r"does not support tools|tools param requires --jinja|tool choice requires "
    r"--enable-auto-tool-choice|no endpoints found that support tool use")


def tools_unsupported(body: str) -> bool:
    return bool(re.search(_TOOLS_UNSUPPORTED, body, re.IGNORECASE))


def tools_hint(backend: str, base_hint: str = HINTS["tools_unsupported"]) -> str:
    """The tools hint with the backend's name in the setting it names."""
    return base_hint.replace("backends.<name>.", f"backends.{backend or '<name>'}.")


class BackendError(Exception):
    """A backend failure, classified so callers decide without parsing strings."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status_code: int | None = None,
        retryable: bool | None = None,
        retry_after: float | None = None,
        backend: str = "",
        partial: ChatResponse | None = None,
        hint: str | None = None,
    ) -> None:
        # A 401 body may quote the key: the message is redacted before anything can show it.
        message = redact(message)
        super().__init__(message)
        self._hint = redact(hint) if hint else hint  # more precise than the kind's, when known
        self.kind: ErrorKind = kind
        self.message = message
        self.status_code = status_code
        self.retryable = kind in RETRYABLE_KINDS if retryable is None else retryable
        self.retry_after = retry_after  # seconds the server asked us to wait, when it said
        self.backend = backend
        # text received before a stream died mid-answer
        self.partial = partial.redacted() if partial is not None else None

    @property
    def hint(self) -> str:
        if self._hint is not None:
            return self._hint
        if self.kind == "connection" and self.partial is not None:
            return "the server was reached but the answer was cut off; try again"
        return HINTS[self.kind]

    def __str__(self) -> str:
        where = f"{self.backend}: " if self.backend else ""
        status = f" (HTTP {self.status_code})" if self.status_code else ""
        return f"{where}{self.kind}{status}: {self.message}"


# Bodies servers send when the prompt does not fit: OpenAI (code context_length_exceeded,
# "maximum context length"), vLLM ("This model's maximum context length is N tokens",
# "longer than the maximum model length"), Ollama ("input length exceeds the context length",
# "context length exceeded"), llama.cpp server (type exceed_context_size_error, "exceeds the
# available context size"), and the generic "prompt is too long" / "too many tokens".
_CONTEXT_TOO_LONG = (
    r"context_length_exceeded|maximum context length|max(imum)? model length"
    r"|context length (is )?exceeded|exceeds? (the )?(available )?context (size|length|window)"
    r"|exceed_context_size|prompt is too long|too many tokens|context window"
    r"|longer than the model'?s context length|input length exceeds"
)
_MODEL_NOT_FOUND = (
    r"model_not_found|model .{0,80}(not found|does not exist)|no such model|unknown model"
    r"|try pulling it first"
)


def classify_status(status: int, body: str) -> tuple[ErrorKind, bool]:
    """Map an HTTP status and the server's body to (kind, retryable)."""
    if status in (400, 422, 500) and tools_unsupported(body):
        return "tools_unsupported", False
    if re.search(_CONTEXT_TOO_LONG, body, re.IGNORECASE) and status in (400, 413, 422, 500):
        return "context_too_long", False
    if status in (401, 403):
        return "auth", False
    if status == 404 or (status == 400 and re.search(_MODEL_NOT_FOUND, body, re.IGNORECASE)):
        return "model_not_found", False
    if status == 429:
        # OpenAI answers 429 when the account has no credit left: waiting will not help.
        return "rate_limit", "insufficient_quota" not in body
    if status in (408, 504):
        return "timeout", True
    if status >= 500:
        return "server_error", True
    return "bad_request", False


def missing_v1_hint(base_url: str, status: int, body: str, backend: str) -> str | None:
    """A 404 that names no model, from a base URL that does not end in ``/v1``, is almost
    always the URL missing its ``/v1`` (``http://localhost:11434`` for Ollama)."""
    url = base_url.rstrip("/")
    if status != 404 or url.endswith("/v1") or re.search(_MODEL_NOT_FOUND, body, re.IGNORECASE):
        return None
    return (f"the server has no chat-completions route at {url}: did you mean {url}/v1? "
            f"(`agentls config set backends.{backend}.base_url {url}/v1`)")


_DURATION_PART = r"(\d+(?:\.\d+)?)(ms|h|m|s)"


def parse_reset_duration(value: str) -> float | None:
    """Parse OpenAI's ``x-ratelimit-reset-*`` values such as ``1s``, ``6m0s``, ``20ms``."""
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parts = re.findall(_DURATION_PART, value)
    if not parts or "".join(n + u for n, u in parts) != value.replace(" ", ""):
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def retry_after_from_headers(
    headers: Mapping[str, str], now: Callable[[], float] | None = None
) -> float | None:
    """Seconds to wait according to ``Retry-After`` (seconds or HTTP date), ``retry-after-ms``
    or ``x-ratelimit-reset-requests/-tokens``; ``None`` when the server did not say."""
    import email.utils
    import time

    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    if "retry-after" in lowered:
        value = lowered["retry-after"].strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                when = None
            if when is not None:
                clock = now or time.time
                return max(0.0, when.timestamp() - clock())
    resets = [
        parse_reset_duration(lowered[name])
        for name in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
        if name in lowered
    ]
    known = [r for r in resets if r is not None]
    return max(known) if known else None


@dataclass(frozen=True, slots=True)
class RetryNotice:
    """Told to front-ends before each retry: ``retry 1/3 in 2.0 s: rate_limit``."""

    attempt: int
    max_retries: int
    delay: float
    reason: str
    backend: str = ""


RetryCallback = Callable[[RetryNotice], None]


class Backend(Protocol):
    """A configured model endpoint."""

    name: str
    model: str

    def stream(
        self,
        request: ChatRequest,
        *,
        on_retry: RetryCallback | None = None,
        use_cache: bool = True,
    ) -> AsyncIterator[ChatChunk]:
        """Text deltas as they arrive, complete tool calls, then one ``done`` chunk."""
        ...

    async def complete(
        self,
        request: ChatRequest,
        *,
        on_retry: RetryCallback | None = None,
        use_cache: bool = True,
    ) -> ChatResponse: ...

    async def list_models(self) -> list[str]: ...

    async def aclose(self) -> None: ...
