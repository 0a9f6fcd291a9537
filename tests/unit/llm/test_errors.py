"""Mapping HTTP statuses and bodies from every supported server to BackendError kinds."""

from __future__ import annotations

import email.utils

import pytest

from agentls.llm.backend import (
    BackendError,
    classify_status,
    parse_reset_duration,
    retry_after_from_headers,
)

CONTEXT_BODIES = {
    "openai": '{"error": {"message": "This model\'s maximum context length is 128000 tokens. '
    'However, your messages resulted in 130000 tokens.", "type": "invalid_request_error", '
    '"code": "context_length_exceeded"}}',
    "vllm": '{"object": "error", "message": "This model\'s maximum context length is 4096 '
    'tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the '
    'completion).", "type": "BadRequestError", "code": 400}',
    "vllm_new": '{"error": {"message": "The decoder prompt (length 9000) is longer than the '
    'maximum model length of 8192."}}',
    "ollama": '{"error": {"message": "input length exceeds the context length", '
    '"type": "api_error"}}',
    "llamacpp": '{"error": {"code": 400, "message": "the request exceeds the available '
    'context size, try increasing it", "type": "exceed_context_size_error", '
    '"n_prompt_tokens": 9000, "n_ctx": 8192}}',
}


@pytest.mark.parametrize("server", sorted(CONTEXT_BODIES))
def test_context_too_long_is_recognised_for_every_server(server: str) -> None:
    assert classify_status(400, CONTEXT_BODIES[server]) == ("context_too_long", False)


@pytest.mark.parametrize(
    ("status", "body", "kind", "retryable"),
    [
        (401, '{"error": {"code": "invalid_api_key"}}', "auth", False),
        (403, "forbidden", "auth", False),
        (404, '{"error": {"code": "model_not_found"}}', "model_not_found", False),
        (404, '{"error": "model \\"llama9\\" not found, try pulling it first"}',
         "model_not_found", False),
        (400, '{"error": {"message": "model \'x\' not found"}}', "model_not_found", False),
        (429, '{"error": {"code": "rate_limit_exceeded"}}', "rate_limit", True),
        (429, '{"error": {"code": "insufficient_quota"}}', "rate_limit", False),
        (500, "boom", "server_error", True),
        (502, "bad gateway", "server_error", True),
        (503, "overloaded", "server_error", True),
        (504, "gateway timeout", "timeout", True),
        (408, "request timeout", "timeout", True),
        (400, '{"error": {"message": "messages: field required"}}', "bad_request", False),
        (422, "unprocessable", "bad_request", False),
    ],
)
def test_status_mapping(status: int, body: str, kind: str, retryable: bool) -> None:
    assert classify_status(status, body) == (kind, retryable)


def test_error_defaults_retryable_from_kind() -> None:
    assert BackendError("rate_limit", "slow down").retryable
    assert BackendError("connection", "refused").retryable
    assert not BackendError("auth", "no").retryable
    assert not BackendError("context_too_long", "big").retryable
    error = BackendError("server_error", "boom", status_code=503, backend="local")
    assert str(error) == "local: server_error (HTTP 503): boom"
    assert "try again" in error.hint


def test_retry_after_seconds_ms_and_http_date() -> None:
    assert retry_after_from_headers({"Retry-After": "3"}) == 3.0
    assert retry_after_from_headers({"retry-after-ms": "1500"}) == 1.5
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 7, usegmt=True)
    assert retry_after_from_headers({"Retry-After": date}, now=lambda: now) == pytest.approx(7)
    past = email.utils.formatdate(now - 100, usegmt=True)
    assert retry_after_from_headers({"Retry-After": past}, now=lambda: now) == 0.0
    assert retry_after_from_headers({"Retry-After": "soon"}) is None
    assert retry_after_from_headers({}) is None


def test_ratelimit_reset_headers() -> None:
    headers = {"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"}
    assert retry_after_from_headers(headers) == 360.0
    assert parse_reset_duration("20ms") == pytest.approx(0.02)
    assert parse_reset_duration("1h2m3.5s") == pytest.approx(3723.5)
    assert parse_reset_duration("2.5") == 2.5
    assert parse_reset_duration("later") is None
