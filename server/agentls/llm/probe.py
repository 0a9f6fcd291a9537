"""A quick look at an OpenAI-compatible server: is it up, does it take our key, what it serves.

`agentls backends` asks ``GET {base_url}/models`` once per backend. It goes through the
``openai`` SDK (already our client) but with a client of its own rather than
``BackendPool``: the pool's backend uses ``backends.<name>.timeout`` (meant for long answers,
120 s by default), opens the response cache, and keeps only model ids, while a diagnostic
needs a short timeout, no cache, and ``owned_by`` (llama.cpp's server answers any model
name, so it must not be reported as missing the configured one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ProbeOutcome = Literal["ok", "auth", "unreachable", "http_error"]


@dataclass(frozen=True)
class ModelsProbe:
    outcome: ProbeOutcome
    models: tuple[str, ...] = ()
    any_model: bool = False  # the server answers whatever model name a request carries
    status_code: int | None = None
    message: str = ""

    def serves(self, model: str) -> bool:
        """Whether ``model`` is listed; Ollama lists ``name:latest`` for a bare ``name``."""
        if self.any_model or model in self.models:
            return True
        return ":" not in model and f"{model}:latest" in self.models


async def probe_models(base_url: str, api_key: str | None, *, timeout: float) -> ModelsProbe:
    """One ``GET /models`` with ``timeout`` seconds in all and no retries; never raises for
    what the server does (refused, hung, 401, HTML instead of JSON)."""
    import httpx2

    from agentls.llm.openai_compat import NO_KEY, openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or NO_KEY, max_retries=0,
                                timeout=timeout)
    try:
        async with client:
            page = await client.models.list()
            entries = list(page.data)
    except openai.APIStatusError as exc:
        outcome: ProbeOutcome = "auth" if exc.status_code in (401, 403) else "http_error"
        said = _server_message(exc.body) or exc.message
        return ModelsProbe(outcome, status_code=exc.status_code, message=_first_line(said))
    except (openai.APITimeoutError, httpx2.TimeoutException):
        return ModelsProbe("unreachable", message=f"timed out after {timeout:g} s")
    except (openai.APIConnectionError, httpx2.HTTPError) as exc:
        cause = exc.__cause__ or exc
        reason = _first_line(str(cause)) or type(cause).__name__
        return ModelsProbe("unreachable", message=f"cannot connect: {reason}")
    except (openai.APIError, ValueError, TypeError) as exc:
        # A server that answered something other than a model list (an HTML page, a proxy).
        return ModelsProbe("http_error", message=f"unexpected answer: {_first_line(str(exc))}")
    models = tuple(str(m.id) for m in entries if getattr(m, "id", None))
    any_model = any(getattr(m, "owned_by", "") == "llamacpp" for m in entries)
    return ModelsProbe("ok", models=models, any_model=any_model, status_code=200)


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _server_message(body: object) -> str:
    """The server's own words from an OpenAI-style error body ``{"error": {"message"}}``."""
    inner = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(inner, dict):
        inner = inner.get("message")
    return inner if isinstance(inner, str) else ""
