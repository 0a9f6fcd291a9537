"""Fill-in-the-middle requests for inline completion, streamed through the ``openai`` client.

Three ways to ask, in the order ``completion.fim = auto`` tries them:

* ``suffix``: ``POST /v1/completions`` with ``prompt`` = the prefix and ``suffix`` (Ollama
  applies the model's own template);
* ``template``: ``/v1/completions`` with the model's FIM template written here
  (``fim_templates``), for servers that refuse ``suffix`` (vLLM) or ignore it;
* ``chat``: ``/v1/chat/completions`` with a strict prompt, for chat-only models.

One client per completion backend, no retries (a completion that failed is stale by the time a
retry could answer) and a short timeout. Cancelling the consuming task closes the HTTP
response at once, so the server sees the connection end and stops generating. Nothing here
logs the prompt or the answer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import httpx2

from agentls.llm import tls
from agentls.llm.backend import BackendError, classify_status
from agentls.llm.openai_import import import_openai

if TYPE_CHECKING:
    import openai
else:
    openai = import_openai()

NO_KEY = "no-key-required"
FimMode = Literal["suffix", "template", "chat"]
MAX_SERVER_STOPS = 4  # OpenAI's limit on `stop`; the rest are enforced as the text streams

CHAT_SYSTEM = (
    "You are a code completion engine. The user sends a file with the marker <CURSOR> where "
    "the cursor is. Reply with ONLY the text to insert at <CURSOR>: no explanation, no "
    "markdown fences, no repetition of the code before or after the cursor. Reply with "
    "nothing if nothing fits.")


@dataclass(frozen=True)
class FimRequest:
    model: str
    mode: FimMode
    prompt: str  # the prefix (suffix mode), the rendered template, or the chat user message
    suffix: str = ""
    max_tokens: int = 128
    temperature: float = 0.1
    stop: Sequence[str] = field(default_factory=tuple)
    system: str = ""  # chat mode: the system prompt (empty: the completion one)


class SuffixRefused(BackendError):
    """The server does not accept ``suffix`` on /v1/completions (vLLM, OpenAI's chat models):
    ask again with the model's template."""


class FimClient:
    """The completion backend's HTTP client; ``stream`` yields text as it arrives."""

    def __init__(self, name: str, base_url: str, api_key: str | None, timeout: float,
                 http_client: httpx2.AsyncClient | None = None) -> None:
        self.name = name
        self.base_url = base_url
        self.timeout = timeout
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key or NO_KEY, max_retries=0,
            timeout=httpx2.Timeout(timeout, connect=min(timeout, 2.0)),
            http_client=http_client or openai.DefaultAsyncHttpxClient(verify=tls.context()))

    async def stream(self, request: FimRequest, finish: list[str] | None = None
                     ) -> AsyncGenerator[str, None]:
        """The completion's text pieces; raises ``BackendError`` (``SuffixRefused`` when the
        server refuses ``suffix``). Stop the iteration (or cancel its task) to close the
        stream: the model server sees the connection end. ``finish`` gets the finish reason
        (``stop``, ``length``) when the server sends one, and the chunk that carries it
        yields its text even when empty: the caller may stop there (what is left is the
        stream's end, ``[DONE]``) and answer before reading on."""
        stop = list(request.stop)[:MAX_SERVER_STOPS] or None
        try:
            if request.mode == "chat":
                chat = await self._client.chat.completions.create(
                    model=request.model, stream=True, max_tokens=request.max_tokens,
                    temperature=request.temperature, stop=stop,
                    messages=[{"role": "system", "content": request.system or CHAT_SYSTEM},
                              {"role": "user", "content": request.prompt}])
                async with chat:
                    async for chunk in chat:
                        for choice in chunk.choices:
                            if choice.finish_reason and finish is not None:
                                finish.append(choice.finish_reason)
                                yield (choice.delta.content or "") if choice.delta else ""
                            elif choice.delta is not None and choice.delta.content:
                                yield choice.delta.content
                return
            extra: dict[str, Any] = {}
            if request.mode == "suffix":
                extra["suffix"] = request.suffix
            completions = await self._client.completions.create(
                model=request.model, prompt=request.prompt, stream=True,
                max_tokens=request.max_tokens, temperature=request.temperature, stop=stop,
                **extra)
            async with completions:
                async for piece in completions:
                    for choice in piece.choices:
                        if choice.finish_reason and finish is not None:
                            finish.append(choice.finish_reason)
                            yield choice.text or ""
                        elif choice.text:
                            yield choice.text
        except (openai.APIError, httpx2.HTTPError) as exc:
            raise self._error(exc, request) from exc
        except ValueError as exc:  # an event that is not JSON
            raise BackendError("server_error", f"{self.base_url} sent a completion stream "
                               f"event that is not valid JSON ({exc})", backend=self.name,
                               retryable=False) from exc

    def _error(self, exc: Exception, request: FimRequest) -> BackendError:
        url = self.base_url
        if isinstance(exc, openai.APIStatusError):
            body = exc.body
            text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
            kind, retryable = classify_status(exc.status_code, f"{text} {exc.message}")
            message = f"{exc.message} (model {request.model!r} at {url})"
            if (request.mode == "suffix" and exc.status_code in (400, 422, 501)
                    and "suffix" in f"{text} {exc.message}".lower()):
                return SuffixRefused("bad_request", message, status_code=exc.status_code,
                                     retryable=False, backend=self.name)
            return BackendError(kind, message, status_code=exc.status_code,
                                retryable=retryable, backend=self.name)
        if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
            return BackendError("timeout", f"no completion from {url} within "
                                f"{self.timeout:g} s", backend=self.name)
        return BackendError("connection", f"cannot reach {url}: {exc.__cause__ or exc}",
                            backend=self.name)

    async def aclose(self) -> None:
        await self._client.close()
