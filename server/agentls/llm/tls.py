"""The TLS context of the model clients, built once, off the main thread when asked early.

Building the default context reads the CA store (~15–25 ms); OpenSSL does that without the
GIL, so `agentls run` starts it before importing the engine and it is ready when the first
backend is made. The context is the one the openai client would build itself:
``httpx2.create_ssl_context()`` (httpx2 is the openai package's HTTP library; a test checks
that it still is), so certificate checks are exactly the client's own, ``SSL_CERT_FILE``
and ``SSL_CERT_DIR`` included.
"""

from __future__ import annotations

import ssl
import threading
from types import ModuleType

_lock = threading.Lock()
_context: ssl.SSLContext | None = None
_building: threading.Thread | None = None


def start() -> None:
    """Build the shared context in a background thread (once); ``context()`` waits for it."""
    global _building
    _import()  # in this thread: two threads importing one package can deadlock
    with _lock:
        if _building is not None or _context is not None:
            return
        # Not a daemon: the interpreter waits for it at exit (a few ms of reading the CA
        # store). A daemon thread still inside OpenSSL when a server exits right after it
        # started made the process end with SIGSEGV (2 in 10 such exits).
        _building = threading.Thread(target=_build, name="agentls-tls", daemon=False)
        _building.start()


def context() -> ssl.SSLContext:
    """The shared context: the one ``start()`` built, else built now (where a bad
    ``SSL_CERT_FILE`` raises its error, as the client would)."""
    global _context
    with _lock:
        building = _building
    if building is not None:
        building.join()
    with _lock:
        if _context is None:
            _context = _import().create_ssl_context()
        return _context


def _import() -> ModuleType:
    import httpcore2  # noqa: F401  (create_ssl_context imports it on first use)
    import httpx2

    return httpx2


def _build() -> None:
    global _context
    try:
        built = _import().create_ssl_context()
    except (OSError, ssl.SSLError, ValueError):
        return  # context() builds it again and raises the error where the client is made
    with _lock:
        if _context is None:
            _context = built
