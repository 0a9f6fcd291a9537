"""Tests for server/agentls/llm/tls.py: the model client's TLS context, built once (early, in
a thread, for `agentls run`), the same as the one the openai client would build."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx2
import openai
import pytest

from agentls.llm import tls
from agentls.llm.openai_compat import OpenAICompatBackend
from agentls.settings.config import BackendConfig


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tls, "_context", None)
    monkeypatch.setattr(tls, "_building", None)


def test_the_openai_client_is_built_on_httpx2() -> None:
    """What tls.py rests on: openai's HTTP library is httpx2, whose create_ssl_context
    builds the client's default context."""
    assert issubclass(openai.DefaultAsyncHttpxClient, httpx2.AsyncClient)


def test_the_context_checks_certificates_as_the_client_would() -> None:
    tls.start()
    ours = tls.context()
    theirs = httpx2.create_ssl_context()
    assert ours.verify_mode == ssl.CERT_REQUIRED and ours.check_hostname
    assert ours.cert_store_stats() == theirs.cert_store_stats()
    assert ours.cert_store_stats()["x509_ca"] > 0
    assert ours.options == theirs.options
    assert tls.context() is ours  # built once


def test_without_start_it_is_built_on_first_use() -> None:
    assert tls.context() is tls.context()


def test_a_bad_ssl_cert_file_is_reported_where_the_client_is_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    tls.start()  # fails in its thread, quietly: nobody waits there
    with pytest.raises(OSError):
        tls.context()
    with pytest.raises(OSError):
        OpenAICompatBackend("b", BackendConfig(base_url="https://example.invalid/v1", model="m"),
                            api_key="k")


def test_the_backend_client_uses_the_shared_context() -> None:
    backend = OpenAICompatBackend("b", BackendConfig(base_url="http://127.0.0.1:9/v1",
                                                     model="m"), api_key="k")
    http = backend._client._client
    assert isinstance(http, openai.DefaultAsyncHttpxClient)
    assert http._transport._pool._ssl_context is tls.context()
