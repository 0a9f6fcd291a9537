"""Prompt token estimates, calibrated per backend and model against what the server reports.

No tokenizer matches every server, so an estimate has two parts:

* a raw count: tiktoken's ``o200k_base`` (else ``cl100k_base``) when tiktoken is installed and
  its encoding files are already on disk (it is never allowed to download them), otherwise the
  character rule of :func:`char_estimate`; plus :data:`MESSAGE_OVERHEAD` per message and
  :data:`TOOL_CALL_OVERHEAD` per tool call;
* a ratio per ``(backend, model)``: ``reported prompt_tokens / raw count``, learned from the
  ``usage`` of real requests (:meth:`TokenEstimator.observe`). The first observation sets it,
  later ones move it by exponential smoothing, and it is clamped to a sane range, so the
  estimate converges to the server's own count whatever tokenizer the server uses.

Raw counts are memoised per message (messages are frozen and hashable, so equal messages share
one entry) and per tool schema, so estimating a long history again costs a dict lookup per
message.
"""

from __future__ import annotations

import importlib
import logging
import math
import string
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, Protocol, TypeVar

from agentls.llm.messages import Message, ToolSpec

log = logging.getLogger(__name__)

CalibrationKey = tuple[str, str]
"""``(backend name, model)``: each pair learns its own ratio."""

CountMethod = Literal["tiktoken", "chars"]

MESSAGE_OVERHEAD = 4  # role and delimiters of one chat message
IMAGE_TOKENS = 765  # an image part: OpenAI's count for 1024x1024 at high detail (85 + 4 x 170)
TOOL_CALL_OVERHEAD = 3  # wrapping of one tool call around its name and arguments
CHARS_PER_TOKEN = 4  # for ASCII letters, digits and "_": prose words and identifiers

MIN_RATIO = 0.25
MAX_RATIO = 4.0
SMOOTHING = 0.3  # weight of each observation after the first
CACHE_LIMIT = 20_000  # memoised messages before the oldest half is forgotten

TIKTOKEN_ENCODINGS = ("o200k_base", "cl100k_base")

_WORD_BYTES = (string.ascii_letters + string.digits + "_").encode()
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))  # UTF-8 bytes that never start a character


def char_estimate(text: str) -> int:
    """Tokens of ``text`` by a character rule, no tokenizer needed.

    ASCII letters, digits and underscores count :data:`CHARS_PER_TOKEN` to a token (English
    prose and identifiers); every other visible character (punctuation, operators, brackets,
    non-ASCII letters) counts one token; whitespace is free. Code is denser in symbols than
    prose, so it comes out at more tokens per character, as it does with real tokenizers.
    """
    if not text:
        return 0
    # Bytes, not str: ``bytes.translate`` deletes in C at memory speed, ~15x str.translate.
    characters = text.encode("utf-8", "surrogatepass").translate(None, _CONTINUATION_BYTES)
    rest = characters.translate(None, _WORD_BYTES)
    word_chars = len(characters) - len(rest)
    spaces = rest.count(b" ") + rest.count(b"\n") + rest.count(b"\t") + rest.count(b"\r")
    return -(-word_chars // CHARS_PER_TOKEN) + len(rest) - spaces


class Encoding(Protocol):
    """The part of ``tiktoken.Encoding`` used here."""

    def encode_ordinary(self, text: str) -> list[int]: ...


_encoding_lock = threading.Lock()
_encoding_decided = False
_encoding: Encoding | None = None


def offline_encoding() -> Encoding | None:
    """tiktoken's encoding if it loads without the network, else ``None``; decided once.

    tiktoken downloads its BPE files on first use. Its downloads all go through
    ``tiktoken.load.read_file``, so while loading that function refuses URLs: files already in
    tiktoken's cache load, and a missing one fails at once instead of waiting on a network.
    """
    global _encoding_decided, _encoding
    with _encoding_lock:
        if not _encoding_decided:
            _encoding = _load_offline_encoding()
            _encoding_decided = True
            log.debug("token counting: %s", "tiktoken" if _encoding else "character estimate")
        return _encoding


def forget_offline_encoding() -> None:
    """Decide again on the next call of :func:`offline_encoding` (after installing tiktoken)."""
    global _encoding_decided, _encoding
    with _encoding_lock:
        _encoding_decided, _encoding = False, None


def _load_offline_encoding() -> Encoding | None:
    try:
        tiktoken = importlib.import_module("tiktoken")
        load: Any = importlib.import_module("tiktoken.load")
    except ImportError:
        return None
    read_file: Callable[[str], bytes] | None = getattr(load, "read_file", None)
    if read_file is None:  # an unknown tiktoken layout: we could not stop a download
        return None

    def read_local_only(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise OSError(f"not downloading {blobpath}: token counting works offline")
        return read_file(blobpath)

    load.read_file = read_local_only
    try:
        for name in TIKTOKEN_ENCODINGS:
            try:
                encoding: Encoding = tiktoken.get_encoding(name)
                return encoding
            except Exception as exc:  # any failure means "not offline"
                log.debug("tiktoken encoding %s unavailable offline: %s", name, exc)
        return None
    finally:
        load.read_file = read_file


class TokenEstimator:
    """Raw token counts with memoisation, and per ``(backend, model)`` calibration.

    One estimator is meant to live as long as the process (share it between sessions): the
    ratios it learns are worth keeping, and its caches are bounded.
    """

    def __init__(self, *, use_tiktoken: bool = True, smoothing: float = SMOOTHING) -> None:
        self._encoding = offline_encoding() if use_tiktoken else None
        self.method: CountMethod = "tiktoken" if self._encoding is not None else "chars"
        self.smoothing = smoothing
        self._messages: dict[Message, int] = {}
        self._tools: dict[str, int] = {}
        self._ratios: dict[CalibrationKey, float] = {}
        self._observations: dict[CalibrationKey, int] = {}

    # --- raw counts ---------------------------------------------------------------------------

    def count_text(self, text: str) -> int:
        """Raw tokens of one text (tiktoken's count, or :func:`char_estimate`)."""
        if not text:
            return 0
        if self._encoding is not None:
            return len(self._encoding.encode_ordinary(text))
        return char_estimate(text)

    def message_tokens(self, message: Message) -> int:
        """Raw tokens of one message, overheads included; memoised."""
        cached = self._messages.get(message)
        if cached is not None:
            return cached
        tokens = MESSAGE_OVERHEAD + self.count_text(message.content or "")
        tokens += IMAGE_TOKENS * len(message.images)
        for call in message.tool_calls:
            tokens += TOOL_CALL_OVERHEAD + self.count_text(call.name)
            tokens += self.count_text(call.arguments)
        _remember(self._messages, message, tokens)
        return tokens

    def tools_tokens(self, tools: Iterable[ToolSpec]) -> int:
        """Raw tokens of the tool schemas sent with a request; memoised per schema."""
        total = 0
        for tool in tools:
            wire = tool.wire_json()
            tokens = self._tools.get(wire)
            if tokens is None:
                tokens = self.count_text(wire)
                _remember(self._tools, wire, tokens)
            total += tokens
        return total

    def raw_estimate(self, messages: Iterable[Message], tools: Iterable[ToolSpec] = ()) -> int:
        """Uncalibrated prompt tokens of a request: what :meth:`observe` compares against."""
        return sum(map(self.message_tokens, messages)) + self.tools_tokens(tools)

    # --- calibration --------------------------------------------------------------------------

    def ratio(self, key: CalibrationKey) -> float:
        """Reported tokens per raw token for this backend and model; 1.0 until observed."""
        return self._ratios.get(key, 1.0)

    def observations(self, key: CalibrationKey) -> int:
        """How many reports have calibrated this backend and model."""
        return self._observations.get(key, 0)

    def observe(
        self, key: CalibrationKey, raw_estimate: int, reported_prompt_tokens: int
    ) -> float:
        """Learn from one request: ``raw_estimate`` is :meth:`raw_estimate` of what was sent
        (not the calibrated figure), ``reported_prompt_tokens`` the server's ``usage``.

        Returns the new ratio. Reports of zero (servers that send no usage, cache hits) are
        ignored.
        """
        if raw_estimate <= 0 or reported_prompt_tokens <= 0:
            return self.ratio(key)
        observed = min(MAX_RATIO, max(MIN_RATIO, reported_prompt_tokens / raw_estimate))
        if key in self._ratios:
            observed = self._ratios[key] + self.smoothing * (observed - self._ratios[key])
        self._ratios[key] = observed
        self._observations[key] = self._observations.get(key, 0) + 1
        return observed

    def observe_request(
        self,
        key: CalibrationKey,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        reported_prompt_tokens: int,
    ) -> float:
        """:meth:`observe` for a request as sent (the raw estimate comes from the cache)."""
        return self.observe(key, self.raw_estimate(messages, tools), reported_prompt_tokens)

    def scale(self, key: CalibrationKey, raw_tokens: float) -> int:
        """A raw count in this backend's and model's tokens."""
        return math.ceil(raw_tokens * self.ratio(key))

    def estimate_messages(
        self,
        key: CalibrationKey,
        messages: Iterable[Message],
        tools: Iterable[ToolSpec] = (),
    ) -> int:
        """Calibrated prompt tokens of a request with these messages and tool schemas."""
        return self.scale(key, self.raw_estimate(messages, tools))


_K = TypeVar("_K")


def _remember(cache: dict[_K, int], key: _K, tokens: int) -> None:
    if len(cache) >= CACHE_LIMIT:
        # Dicts keep insertion order: forget the oldest half, which old sessions hold.
        for stale in list(cache)[: CACHE_LIMIT // 2]:
            del cache[stale]
    cache[key] = tokens
