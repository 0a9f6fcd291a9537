"""A backend for any server that speaks OpenAI's chat-completions API, over ``openai.AsyncOpenAI``.

One client per configured backend, reused for every request and closed on shutdown. The SDK's
own retries are off (``max_retries=0``): ``RetryPolicy`` is the only place that retries.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import httpx2

from agentls.llm import tls
from agentls.llm.backend import (
    HINTS,
    BackendError,
    RetryCallback,
    classify_status,
    missing_v1_hint,
    retry_after_from_headers,
    tools_hint,
)
from agentls.llm.finish import finish_of, refusal_of
from agentls.llm.messages import (
    ChatChunk,
    ChatRequest,
    ChatResponse,
    ToolCall,
    ToolSpec,
    Usage,
)
from agentls.llm.openai_import import import_openai
from agentls.llm.retry import RetryPolicy
from agentls.llm.stream_assembly import StreamAssembler, arguments_text, usage_of
from agentls.policy.redaction import StreamRedactor
from agentls.settings.config import BackendConfig

if TYPE_CHECKING:
    import openai

    from agentls.llm.cache import ResponseCache
else:  # the same package, without building the ~700 API models a chat never uses
    openai = import_openai()

log = logging.getLogger(__name__)

# Sent when a backend needs no key, so the SDK never falls back to OPENAI_API_KEY and hands
# the person's OpenAI key to a local server.
NO_KEY = "no-key-required"



class OpenAICompatBackend:
    def __init__(
        self,
        name: str,
        config: BackendConfig,
        *,
        api_key: str | None,
        retry: RetryPolicy | None = None,
        cache: ResponseCache | None = None,
        open_cache: Callable[[], ResponseCache | None] | None = None,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        """``open_cache``, instead of ``cache``: opens the cache the first time a request may
        be answered from it (agent runs are not, by default), so a run that never consults it
        does not wait for it to open."""
        self.name = name
        self.config = config
        self.model = config.model
        self.retry = retry or RetryPolicy()
        self._cache = cache
        self._open_cache = open_cache
        self._has_key = api_key is not None
        # tool_calls = "text", or "auto" once the server refused tools: the tools are
        # described in the prompt and the calls read from the text (llm/text_tool_calls.py).
        self.tools_as_text = getattr(config, "tool_calls", "native") == "text"
        self._client = openai.AsyncOpenAI(
            base_url=config.base_url,
            api_key=api_key or NO_KEY,
            max_retries=0,
            timeout=config.timeout,
            # The client's own default, with the TLS context built once (llm/tls.py).
            http_client=http_client or openai.DefaultAsyncHttpxClient(verify=tls.context()),
        )

    @property
    def cache(self) -> ResponseCache | None:
        if self._open_cache is not None:
            self._cache, self._open_cache = self._open_cache(), None
        return self._cache

    # --- requests -----------------------------------------------------------------------------

    def _sampling(self, request: ChatRequest) -> tuple[str, int, float]:
        """Model, max_tokens and temperature: the request's own, else the backend's."""
        return (
            request.model or self.config.model,
            request.max_tokens or self.config.max_tokens,
            self.config.temperature if request.temperature is None else request.temperature,
        )

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        model, max_tokens, temperature = self._sampling(request)
        if request.tools and self.tools_as_text:
            from agentls.llm.text_tool_calls import as_text_protocol

            messages = as_text_protocol(request.messages, request.tools)
        else:
            messages = [m.to_openai() for m in request.messages]
        params: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if request.tools and not self.tools_as_text:
            params["tools"] = [t.to_openai() for t in request.tools]
        return params

    def _cache_key(self, request: ChatRequest) -> str:
        # llm/cache.py waits for a request the cache may answer (not an agent run's, by default)
        from agentls.llm.cache import request_key

        model, max_tokens, temperature = self._sampling(request)
        return request_key(
            request,
            backend=self.name,
            base_url=self.config.base_url,
            model=model,
            max_tokens=max_tokens,
            temperature=temperature,
        )

    async def stream(
        self,
        request: ChatRequest,
        *,
        on_retry: RetryCallback | None = None,
        use_cache: bool = True,
    ) -> AsyncIterator[ChatChunk]:
        key = self._cache_key(request) if use_cache and self.cache else None
        if key is not None and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                for chunk in replay(hit):
                    yield chunk
                return
        params = self._params(request)
        tools = request.tools
        try:
            async for chunk in self.retry.stream(lambda: self._stream_once(params, tools),
                                                 on_retry):
                if chunk.kind == "done" and key is not None and self.cache is not None:
                    assert chunk.response is not None
                    self.cache.put(key, chunk.response)
                yield chunk
        except BackendError as exc:
            if not (exc.kind == "tools_unsupported" and tools and not self.tools_as_text
                    and getattr(self.config, "tool_calls", "native") == "auto"):
                raise
            # tool_calls = "auto": the server takes no tools, so describe them in the prompt
            # from now on (for this backend's life) and ask again.
            log.info("%s refused tools (%s): tools described in the prompt from now on",
                     self.name, exc.message)
            self.tools_as_text = True
            params = self._params(request)
            async for chunk in self.retry.stream(lambda: self._stream_once(params, tools),
                                                 on_retry):
                yield chunk

    async def _stream_once(self, params: dict[str, Any], tools: list[ToolSpec] | None = None
                           ) -> AsyncIterator[ChatChunk]:
        assembler = StreamAssembler()
        redactor = StreamRedactor()
        thinking = StreamRedactor()
        try:
            stream = await self._client.chat.completions.create(
                **params, stream=True, stream_options={"include_usage": True}
            )
            async with stream:
                async for raw in stream:
                    delta = redactor.feed(assembler.feed(raw))
                    thought = thinking.feed(assembler.reasoning) if assembler.reasoning else ""
                    if delta:  # the answer has begun: the thinking held back goes first
                        thought += thinking.flush()
                    if thought:
                        yield ChatChunk("reasoning", text=thought)
                    if delta:
                        yield ChatChunk("text", text=delta)
            thought = thinking.flush()
            if thought:
                yield ChatChunk("reasoning", text=thought)
            tail = redactor.flush()
            if tail:
                yield ChatChunk("text", text=tail)
        except (openai.APIError, httpx2.HTTPError) as exc:
            tail = redactor.flush()  # the partial text below is what was shown
            if tail:
                yield ChatChunk("text", text=tail)
            partial = assembler.response() if assembler.text or assembler.calls else None
            raise self._error(exc, partial=partial, mid_stream=partial is not None,
                              model=params["model"]) from exc
        except ValueError as exc:  # an event that is not JSON: a proxy's page, a broken server
            tail = redactor.flush()
            if tail:
                yield ChatChunk("text", text=tail)
            partial = assembler.response() if assembler.text or assembler.calls else None
            raise BackendError(
                "server_error",
                f"{self.config.base_url} sent a stream event that is not valid JSON ({exc})",
                backend=self.name, partial=partial, retryable=partial is None,
            ) from exc
        if assembler.finish_reason is None:
            # The server closed a well-formed stream without saying why it stopped.
            partial = assembler.response()
            raise BackendError(
                "connection",
                f"the stream from {self.config.base_url} ended before the model finished",
                backend=self.name,
                partial=partial,
            )
        response = self._with_text_calls(assembler.response(), tools).redacted()
        for call in response.tool_calls:
            yield ChatChunk("tool_call", tool_call=call)
        yield ChatChunk("done", response=response)

    def _with_text_calls(self, response: ChatResponse, tools: list[ToolSpec] | None
                         ) -> ChatResponse:
        """The calls the model wrote as text, read as calls (llm/text_tool_calls.py); an
        attempted call that cannot be read ends the request with the reason and what to do."""
        if not tools:
            return response
        if self.tools_as_text:
            response.tools_as_text = True
        if response.tool_calls or not response.text:
            return response
        from agentls.llm.text_tool_calls import FORM_NAMES, read_text_calls

        reading = read_text_calls(response.text, tools)
        if reading.calls:
            response.text, response.tool_calls = reading.text, reading.calls
            response.calls_from_text = reading.form
            if response.finish_reason == "stop":
                response.finish_reason = "tool_calls"
            return response
        if reading.problem:
            how = ("its answer" if self.tools_as_text
                   else f"its text (the server at {self.config.base_url} did not parse it)")
            raise BackendError(
                "tool_calls_unread",
                f"the model wrote a tool call in {how} that AgentLS cannot read: "
                f"{reading.problem}. Forms read: " + "; ".join(FORM_NAMES.values()),
                backend=self.name, retryable=False, partial=response,
                hint=tools_hint(self.name, HINTS["tool_calls_unread"]))
        return response

    async def complete(
        self,
        request: ChatRequest,
        *,
        on_retry: RetryCallback | None = None,
        use_cache: bool = True,
    ) -> ChatResponse:
        key = self._cache_key(request) if use_cache and self.cache else None
        if key is not None and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit
        params = self._params(request)
        response = await self.retry.call(lambda: self._complete_once(params), on_retry)
        if key is not None and self.cache is not None:
            self.cache.put(key, response)
        return response

    async def _complete_once(self, params: dict[str, Any]) -> ChatResponse:
        try:
            raw = await self._client.chat.completions.create(**params, stream=False)
        except (openai.APIError, httpx2.HTTPError) as exc:
            raise self._error(exc, model=params["model"]) from exc
        if not getattr(raw, "choices", None):
            # The SDK hands back the body as text when it is not JSON (an HTML error page).
            said = " ".join(str(raw).split())[:160]
            raise BackendError(
                "server_error",
                f"{self.config.base_url} did not answer with a chat completion: {said!r}",
                backend=self.name, retryable=False,
            )
        choice = raw.choices[0]
        calls = [
            ToolCall(c.id or f"call_{i}", c.function.name, arguments_text(c.function.arguments))
            for i, c in enumerate(choice.message.tool_calls or ())
            if getattr(c, "function", None) is not None
        ]
        refusal = refusal_of(choice.message)
        return ChatResponse(
            text=choice.message.content or refusal,
            tool_calls=calls,
            finish_reason=finish_of(choice.finish_reason, bool(refusal)),
            usage=usage_of(raw.usage) if raw.usage else Usage(),
            model=raw.model or params["model"],
        ).redacted()

    async def embed(self, texts: list[str], *, on_retry: RetryCallback | None = None
                    ) -> list[list[float]]:
        """``POST /v1/embeddings`` for ``texts`` (one request), under the chat retry policy."""
        return await self.retry.call(lambda: self._embed_once(texts), on_retry)

    async def _embed_once(self, texts: list[str]) -> list[list[float]]:
        try:
            raw = await self._client.embeddings.create(model=self.model, input=texts,
                                                       encoding_format="float")
        except (openai.APIError, httpx2.HTTPError) as exc:
            raise self._error(exc) from exc
        data = sorted(getattr(raw, "data", None) or [], key=lambda item: item.index)
        if len(data) != len(texts):
            raise BackendError(
                "server_error", f"{self.config.base_url} answered {len(data)} embeddings for "
                f"{len(texts)} inputs", backend=self.name, retryable=False)
        return [list(item.embedding) for item in data]

    async def list_models(self) -> list[str]:
        try:
            page = await self._client.models.list()
        except (openai.APIError, httpx2.HTTPError) as exc:
            raise self._error(exc) from exc
        return [m.id for m in page.data]

    async def aclose(self) -> None:
        await self._client.close()

    # --- errors -------------------------------------------------------------------------------

    def _error(
        self, exc: Exception, *, partial: ChatResponse | None = None, mid_stream: bool = False,
        model: str | None = None,
    ) -> BackendError:
        url = self.config.base_url
        if isinstance(exc, openai.APIStatusError):
            body = exc.body
            text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
            kind, retryable = classify_status(exc.status_code, f"{text} {exc.message}")
            message = _server_message(body) or exc.message
            if kind == "auth" and not self._has_key and self.config.api_key_env:
                message += f" (the environment variable {self.config.api_key_env} is not set)"
            hint = None
            if kind == "tools_unsupported":
                hint = tools_hint(self.name)
            if kind == "model_not_found":
                message += f" (model {(model or self.config.model)!r} at {url})"
                hint = missing_v1_hint(url, exc.status_code, text, self.name)
            return BackendError(
                kind,
                message,
                status_code=exc.status_code,
                retryable=retryable,
                retry_after=retry_after_from_headers(exc.response.headers),
                backend=self.name,
                partial=partial,
                hint=hint,
            )
        if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
            return BackendError(
                "timeout",
                f"no answer from {url} within {self.config.timeout:g} s",
                backend=self.name,
                partial=partial,
                retryable=not mid_stream,
            )
        cause = exc.__cause__ or exc
        if mid_stream:
            message = f"the connection to {url} dropped mid-answer ({cause})"
        else:
            message = f"cannot reach {url}: {cause}"
        return BackendError("connection", message, backend=self.name, partial=partial)


def _server_message(body: object) -> str:
    """The server's own words from an OpenAI-style error body."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
        if isinstance(body.get("message"), str):
            return str(body["message"])
    if isinstance(body, str):
        return body.strip()
    return ""


def replay(response: ChatResponse) -> list[ChatChunk]:
    """A cached answer as the chunks a live stream would have produced, flagged ``cached``."""
    chunks = [ChatChunk("text", text=response.text, cached=True)] if response.text else []
    chunks += [ChatChunk("tool_call", tool_call=c, cached=True) for c in response.tool_calls]
    chunks.append(ChatChunk("done", response=response, cached=True))
    return chunks
