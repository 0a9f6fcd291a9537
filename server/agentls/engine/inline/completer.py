"""Inline completion's fast path (DESIGN.md decision 15): never the agent loop.

One ``InlineCompleter`` per server. Per document there is one slot: a new request cancels
the one before it at once (its task, and with it the HTTP stream to the model, so the model
stops), waits for it to be gone, so at most one model request per document is ever in
flight, and, for automatic triggers, pauses ``completion.debounce_ms`` in which a newer
keystroke replaces it without any model call. Before any of that, two caches in memory
answer without the model: typed-through (the person typed the start of the suggestion on
screen: the rest of it) and a small LRU keyed by the hash of the windows. Nothing is
written to disk; the log never holds the code or the completion.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field

from agentls.engine.inline.cursor_context import Window, chat_prompt, fit_files, window
from agentls.engine.inline.post import StopRule, clean
from agentls.engine.model_slots import Slot, Status, StatusTeller, fim_client_for
from agentls.llm.backend import BackendError
from agentls.llm.fim import FimClient, FimMode, FimRequest, SuffixRefused
from agentls.llm.fim_templates import ContextFile, FimTemplate, TemplateError, template_for
from agentls.settings.models import CompletionConfig, Settings

log = logging.getLogger(__name__)

LRU_SIZE = 256
WAITING_AFTER_S = 0.15  # a model slower than this shows "waiting"
TYPED_CONTEXT = 64  # characters before the suggestion that must be unchanged to type through
READ_END_AFTER_S = 0.002  # a finished stream's end is read after the answer has gone


@dataclass(frozen=True)
class CompletionRequest:
    uri: str
    path: str  # as the model sees it: relative to the workspace
    repo: str
    text: str  # the document (only the windows are read)
    offset: int  # the cursor
    automatic: bool
    unit: str  # the file's indentation step
    eol: str
    comment: str = "#"
    files: Sequence[ContextFile] = ()  # other files, already within reach


@dataclass
class _Shown:
    offset: int
    before: str  # the text just before the cursor when it was shown
    after: str  # the text just after
    text: str


@dataclass
class _Slot(Slot[str]):
    shown: _Shown | None = None


@dataclass
class Counters:
    """What happened, for tests and the benchmark (no text)."""

    model_requests: int = 0
    typed_through: int = 0
    lru_hits: int = 0
    superseded: int = 0
    errors: int = 0
    sent_at: list[float] = field(default_factory=list)  # perf_counter when each request left


class InlineCompleter(StatusTeller):
    def __init__(self, on_status: Callable[[Status, str], None] | None = None) -> None:
        super().__init__(on_status)
        self.config = CompletionConfig()
        self.client: FimClient | None = None
        self.model = ""
        self.mode: FimMode = "suffix"
        self.template: FimTemplate | None = None
        self.problem = ""
        self.counters = Counters()
        self._slots: dict[str, _Slot] = {}
        self._lru: OrderedDict[str, str] = OrderedDict()
        self._ending: set[asyncio.Future[None]] = set()  # finished streams read to their end

    # --- settings ------------------------------------------------------------------------------

    def use_settings(self, settings: Settings) -> FimClient | None:
        """Follow ``settings.completion``: the backend it names (else the active one), a FIM
        client for that server and the model to ask. Returns the client used until now,
        for the caller to close (its requests may still be finishing)."""
        old, wanted = self.client, settings.completion
        client, model = fim_client_for(settings, wanted)
        self.configure(wanted, client, model)
        if client is not None:
            log.info("inline completion: model %s at %s (%s)", model, client.base_url,
                     wanted.fim)
        return old

    def configure(self, config: CompletionConfig, client: FimClient | None, model: str) -> None:
        """New settings: the client (None: completion off) and the model it asks."""
        self.config, self.client, self.model = config, client, model
        self._lru.clear()
        self.problem = ""
        try:
            self.template = template_for(model, config.template)
        except TemplateError as exc:
            self.template, self.problem = None, str(exc)
        if config.fim == "template" and self.template is None:
            self.problem = self.problem or (
                f"completion.fim is `template` but no template is known for model {model!r}: "
                "set completion.template (qwen, starcoder2, deepseek, codellama, codestral, "
                "or your own text with {prefix} and {suffix})")
        self.mode = "suffix" if config.fim == "auto" else config.fim
        if client is None:
            self._set_status("off", "")
        elif self.problem:
            self._set_status("error", self.problem)
        else:
            self._set_status("idle", "")

    # --- one request -----------------------------------------------------------------------------

    def cancel(self, uri: str) -> None:
        """The document closed or changed away from the suggestion: stop its model request."""
        slot = self._slots.get(uri)
        if slot is not None and slot.task is not None:
            slot.task.cancel()

    def forget(self, uri: str) -> None:
        self.cancel(uri)
        self._slots.pop(uri, None)

    async def complete(self, request: CompletionRequest) -> str:
        """The completion to show at the cursor ("" for none)."""
        slot = self._slots.setdefault(request.uri, _Slot())
        generation, previous, superseded = slot.supersede()
        if superseded:
            self.counters.superseded += 1
        if self.client is None or self.problem:
            return ""
        typed = self._typed_through(slot, request)
        if typed is not None:
            self.counters.typed_through += 1
            return typed
        win = window(request.text, request.offset, self.config.context_tokens,
                     unit=request.unit, eol=request.eol)
        files = fit_files(request.files, self.config.context_tokens)
        key = self._key(request, win, files)
        hit = self._lru.get(key)
        if hit is not None:
            self._lru.move_to_end(key)
            self.counters.lru_hits += 1
            self._remember(slot, request, hit)
            return hit
        pause_s = self.config.debounce_ms / 1000 if request.automatic else 0
        if not await slot.settle(generation, previous, pause_s):
            return ""  # a newer keystroke took over: no model call
        answered, text = await slot.run(self._ask(request, win, files))
        if not answered or text is None:
            return ""  # superseded by a newer keystroke
        if text:
            self._lru[key] = text
            if len(self._lru) > LRU_SIZE:
                self._lru.popitem(last=False)
            if slot.generation == generation:
                self._remember(slot, request, text)
        return text

    def _key(self, request: CompletionRequest, win: Window, files: Sequence[ContextFile]
             ) -> str:
        digest = hashlib.blake2b(digest_size=16)
        for part in (self.mode, self.model, request.path, win.prefix, "\0", win.suffix,
                     *(f.path + f.text for f in files)):
            digest.update(part.encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def _remember(self, slot: _Slot, request: CompletionRequest, text: str) -> None:
        at = request.offset
        slot.shown = _Shown(at, request.text[max(0, at - TYPED_CONTEXT):at],
                            request.text[at:at + TYPED_CONTEXT], text)

    def _typed_through(self, slot: _Slot, request: CompletionRequest) -> str | None:
        shown = slot.shown
        if shown is None or request.offset < shown.offset:
            return None
        typed = request.text[shown.offset:request.offset]
        if not shown.text.startswith(typed) or len(typed) >= len(shown.text):
            return None
        at = shown.offset
        if request.text[max(0, at - TYPED_CONTEXT):at] != shown.before:
            return None
        if request.text[request.offset:request.offset + TYPED_CONTEXT] != shown.after[
                :len(request.text[request.offset:request.offset + TYPED_CONTEXT])]:
            return None
        return shown.text[len(typed):]

    # --- the model -------------------------------------------------------------------------------

    def _request(self, request: CompletionRequest, win: Window,
                 files: Sequence[ContextFile]) -> FimRequest:
        config = self.config
        common = {"model": self.model, "max_tokens": config.max_tokens,
                  "temperature": config.temperature}
        if self.mode == "suffix":
            prompt = win.prefix
            if files:
                from agentls.llm.fim_templates import commented_files

                prompt = commented_files(files, request.comment) + win.prefix
            return FimRequest(mode="suffix", prompt=prompt, suffix=win.suffix,
                              stop=[*config.stop], **common)  # type: ignore[arg-type]
        if self.mode == "template" and self.template is not None:
            prompt = self.template.render(win.prefix, win.suffix, path=request.path,
                                          repo=request.repo, files=files,
                                          comment=request.comment)
            return FimRequest(mode="template", prompt=prompt,
                              stop=[*self.template.stop, *config.stop],
                              **common)  # type: ignore[arg-type]
        return FimRequest(mode="chat", prompt=chat_prompt(request.path, win, files),
                          stop=[*config.stop], **common)  # type: ignore[arg-type]

    async def _ask(self, request: CompletionRequest, win: Window,
                   files: Sequence[ContextFile]) -> str:
        assert self.client is not None
        loop = asyncio.get_running_loop()
        waiting = loop.call_later(WAITING_AFTER_S, self._waiting)
        try:
            async with asyncio.timeout(self.config.timeout_s):
                try:
                    text = await self._stream(request, win, files)
                except SuffixRefused:
                    self.mode = "template" if self.template is not None else "chat"
                    log.info("the completion server refuses `suffix`: completions use the %s "
                             "from now on", f"{self.template.name} template" if self.template
                             else "chat model")
                    text = await self._stream(request, win, files)
        except BackendError as exc:
            self.counters.errors += 1
            log.warning("inline completion failed: %s", exc)
            self._set_status("error", f"{exc} ({exc.hint})")
            return ""
        except TimeoutError:
            self.counters.errors += 1
            message = (f"the completion model did not answer within "
                       f"{self.config.timeout_s:g} s (completion.timeout_s)")
            log.warning("inline completion: %s", message)
            self._set_status("error", message)
            return ""
        finally:
            waiting.cancel()
        self._set_status("idle", "")
        return text

    async def _stream(self, request: CompletionRequest, win: Window,
                      files: Sequence[ContextFile]) -> str:
        assert self.client is not None
        fim = self._request(request, win, files)
        rule = StopRule(win.where, fim.stop, self.config.max_lines)
        self.counters.model_requests += 1
        self.counters.sent_at.append(time.perf_counter())
        if len(self.counters.sent_at) > 4096:
            del self.counters.sent_at[:2048]
        received = ""
        text = ""
        finish: list[str] = []
        stream = self.client.stream(fim, finish)
        echo = win.prefix if "\n" in win.prefix.rstrip("\n") else ""
        finished = False
        try:
            async for piece in stream:
                received += piece
                if echo and len(received) <= len(echo) and echo.startswith(received):
                    continue  # maybe the model is writing the file again: wait and see
                if echo and received.startswith(echo):
                    received, echo = received[len(echo):], ""  # it did: keep the middle
                echo = ""
                text, ended = rule.cut(received)
                if ended:
                    break
                if finish:  # the model is done: only the stream's end is left to read
                    finished = True
                    text, _ = rule.cut(received, final=True)
                    break
            else:
                text, _ = rule.cut(received, final=True)
        finally:
            if finished:
                self._read_end_later(stream)
            else:
                await stream.aclose()  # closes the HTTP response now: the model stops
        return clean(text, win.where, chat=fim.mode == "chat")

    def _read_end_later(self, stream: AsyncGenerator[str, None]) -> None:
        """Read a finished stream's end after the answer has gone (the connection is kept
        for the next request only once its response is read to the end)."""
        async def read_end() -> None:
            await asyncio.sleep(READ_END_AFTER_S)
            try:
                async for _ in stream:
                    pass
            except Exception as exc:  # the answer has gone: nothing waits for this
                log.debug("inline completion: reading the stream's end failed: %s", exc)
            finally:
                await stream.aclose()

        task = asyncio.ensure_future(read_end())
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)

    async def aclose(self) -> None:
        for slot in self._slots.values():
            if slot.task is not None:
                slot.task.cancel()
        if self.client is not None:
            await self.client.aclose()
