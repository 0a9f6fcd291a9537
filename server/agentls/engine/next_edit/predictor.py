"""Asking the model for the next edit, and turning its rewrite into one checked suggestion.

One ``NextEditPredictor`` per server; per document one slot, as inline completion's
(``engine/inline/completer.py``): a new request cancels the one before it (its task, and with
it the model's stream), a keystroke does too (``cancel``), at most one model request per
document is in flight, and a request waits ``next_edit.debounce_ms`` in which a newer one
replaces it without any model call. An answer is dropped when the document moved past the
version it was asked for. The model's rewrite of the editable region becomes hunks; the one
at or after the cursor is offered, and the others are kept so that, once it is accepted, the
next is offered without asking the model again. What the person did with each suggestion
(shown, accepted, rejected, ignored) is kept for the next prompts: a suggestion turned down is
not offered again. Nothing is written to disk; the log never holds code.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from agentls.engine.model_slots import Slot, Status, StatusTeller, fim_client_for
from agentls.engine.next_edit.hunks import Hunk, line_hunks, trimmed
from agentls.engine.next_edit.prompt_formats import (
    REGION_END,
    OutsideRegion,
    Prompt,
    Unreadable,
    chat_prompt,
    fit_edits,
    parse_rewrite,
    region_ended,
    zeta_prompt,
)
from agentls.engine.next_edit.recent_edits import Edit
from agentls.engine.next_edit.region import Excerpt, excerpt
from agentls.llm.backend import BackendError
from agentls.llm.fim import FimClient, FimRequest
from agentls.settings.models import NextEditConfig

if TYPE_CHECKING:
    from agentls.settings.models import Settings

log = logging.getLogger(__name__)

Outcome = Literal["shown", "accepted", "rejected", "ignored"]
WAITING_AFTER_S = 1.0  # a rewrite takes a while: "waiting" only for a slow model, not every request
IDLE_AFTER_S = 0.01
OUTCOMES_KEPT = 32
REJECTED_IN_PROMPT = 4


@dataclass(frozen=True)
class NextEditRequest:
    uri: str
    path: str  # as the model sees it: relative to the workspace
    version: int | None
    text: str
    cursor: int  # offset
    eol: str = "\n"
    edits: Sequence[Edit] = ()
    related: Sequence[str] = ()  # definitions the chat prompt may quote


@dataclass(frozen=True)
class Suggestion:
    id: str
    uri: str
    version: int | None
    start: int  # offsets in the document text it was made for
    end: int
    text: str
    old: str  # the text it replaces
    lines: tuple[str, str] = ("", "")  # the whole lines it changes, before and after


@dataclass
class _Prediction:
    before: str  # the document before the region, as it was
    after: str  # the document after the region
    new_region: str
    hunks: Counter[tuple[str, str]]  # the lines of every hunk, as first predicted


@dataclass
class _Slot(Slot[str | None]):
    prediction: _Prediction | None = None


@dataclass
class Record:
    suggestion: Suggestion
    outcome: Outcome
    at: float


@dataclass
class Counters:
    """What happened, for tests and the benchmark (no text)."""

    model_requests: int = 0
    superseded: int = 0  # requests replaced by a newer one or closed by a keystroke
    stale: int = 0  # answers dropped: the document moved on
    refused: int = 0  # answers outside the region, unreadable, or turned down before
    from_prediction: int = 0  # suggestions served from the last rewrite, no model call
    errors: int = 0
    sent_at: list[float] = field(default_factory=list)  # perf_counter when each request left
    answered_at: list[float] = field(default_factory=list)  # when the model's stream ended


class NextEditPredictor(StatusTeller):
    def __init__(self, on_status: Callable[[Status, str], None] | None = None) -> None:
        super().__init__(on_status)
        self.config = NextEditConfig()
        self.client: FimClient | None = None
        self.model = ""
        self.format = "chat"
        self.counters = Counters()
        self.outcomes: deque[Record] = deque(maxlen=OUTCOMES_KEPT)
        self._slots: dict[str, _Slot] = {}
        self._shown: dict[str, Suggestion] = {}  # by id: offered, outcome not known yet
        self._ids = itertools.count(1)
        self._closing: set[asyncio.Future[None]] = set()  # model streams being closed

    # --- settings and status ----------------------------------------------------------------

    def use_settings(self, settings: Settings) -> FimClient | None:
        """Follow ``settings.next_edit``: the backend it names (else the active one), a FIM
        client for that server and the model to ask. Returns the client used until now, for
        the caller to close (its requests may still be finishing)."""
        old, wanted = self.client, settings.next_edit
        client, model = fim_client_for(settings, wanted)
        self.configure(wanted, client, model)
        if client is not None:
            log.info("next edit: model %s at %s (%s prompt)", model, client.base_url,
                     self.format)
        return old

    def configure(self, config: NextEditConfig, client: FimClient | None, model: str) -> None:
        self.config, self.client, self.model = config, client, model
        wanted = config.format
        self.format = wanted if wanted != "auto" else ("zeta" if "zeta" in model.lower()
                                                       else "chat")
        for slot in self._slots.values():
            slot.prediction = None
        self._set_status("off" if client is None else "idle", "")

    # --- what the person did ----------------------------------------------------------------

    def record(self, suggestion_id: str, outcome: Outcome) -> Suggestion | None:
        """The person saw, accepted or turned down a suggestion (ids not known: None)."""
        suggestion = self._shown.get(suggestion_id)
        if suggestion is None:
            return None
        if outcome != "shown":
            del self._shown[suggestion_id]
        self.outcomes.append(Record(suggestion, outcome, time.monotonic()))
        if outcome == "rejected":
            slot = self._slots.get(suggestion.uri)
            if slot is not None:
                slot.prediction = None
        return suggestion

    def _settle_shown(self, uri: str, text: str) -> None:
        """Suggestions for ``uri`` still open when a new one is asked for: accepted if the
        document holds their text where they were (a client that does not send the accept
        command), else ignored."""
        for suggestion_id, suggestion in list(self._shown.items()):
            if suggestion.uri != uri:
                continue
            applied = (text[suggestion.start:suggestion.start + len(suggestion.text)]
                       == suggestion.text and suggestion.text != suggestion.old)
            self.record(suggestion_id, "accepted" if applied else "ignored")

    def rejected_texts(self) -> list[str]:
        return [r.suggestion.text for r in self.outcomes if r.outcome == "rejected"][
            -REJECTED_IN_PROMPT:]

    def _turned_down(self) -> set[tuple[str, str]]:
        """The lines of the changes dismissed: the same change of the same lines is not
        offered again (the same rename elsewhere is: that is another suggestion)."""
        return {r.suggestion.lines for r in self.outcomes if r.outcome == "rejected"}

    # --- one request ------------------------------------------------------------------------

    def cancel(self, uri: str) -> None:
        """A keystroke in the document: its model request is stale, close it now."""
        slot = self._slots.get(uri)
        if slot is not None and slot.task is not None and not slot.task.done():
            slot.task.cancel()
            self.counters.superseded += 1

    def forget(self, uri: str) -> None:
        self.cancel(uri)
        self._slots.pop(uri, None)
        for suggestion_id, suggestion in list(self._shown.items()):
            if suggestion.uri == uri:
                del self._shown[suggestion_id]

    async def suggest(self, request: NextEditRequest,
                      current_version: Callable[[], int | None]) -> Suggestion | None:
        """The suggestion to show for ``request`` (None: none, or dropped as stale)."""
        slot = self._slots.setdefault(request.uri, _Slot())
        generation, previous, superseded = slot.supersede()
        if superseded:
            self.counters.superseded += 1
        self._settle_shown(request.uri, request.text)
        if self.client is None:
            return None
        kept = self._from_prediction(slot, request)
        if kept is not None:
            self.counters.from_prediction += 1
            return kept
        if not await slot.settle(generation, previous, self.config.debounce_ms / 1000):
            return None  # a newer request took over: no model call
        if current_version() != request.version:
            self.counters.stale += 1
            return None
        cut = excerpt(request.text, request.cursor, self.config.region_tokens,
                      self.config.context_tokens)
        prompt = self._prompt(request, cut)
        _, answer = await slot.run(self._ask(prompt))
        if answer is None:
            return None  # closed by a keystroke or a newer request, or no answer
        if current_version() != request.version or slot.generation != generation:
            self.counters.stale += 1
            return None
        return self._suggestion(slot, request, cut, answer)

    def _prompt(self, request: NextEditRequest, cut: Excerpt) -> Prompt:
        edits = fit_edits(request.edits, self.config.history_tokens)
        if self.format == "zeta":
            return zeta_prompt(request.path, cut, edits)
        return chat_prompt(request.path, cut, edits, request.related, self.rejected_texts())

    def _suggestion(self, slot: _Slot, request: NextEditRequest, cut: Excerpt,
                    answer: str) -> Suggestion | None:
        try:
            new_region = parse_rewrite(answer, cut)
        except (Unreadable, OutsideRegion) as exc:
            self.counters.refused += 1
            log.info("next edit: the model's answer is refused: %s", exc)
            return None
        if request.eol == "\r\n":
            new_region = new_region.replace("\n", "\r\n")
        region = cut.region
        found = line_hunks(region, new_region)
        if not found:
            slot.prediction = None
            return None
        slot.prediction = _Prediction(request.text[:cut.start], request.text[cut.end:],
                                      new_region, Counter(h.lines for h in found))
        return self._pick(request, cut.start, region, found)

    def _pick(self, request: NextEditRequest, region_start: int, region: str,
              found: Sequence[Hunk]) -> Suggestion | None:
        """The first hunk (of ``line_hunks``) not turned down that ends at or after the
        cursor once cut, else the last; only the hunks looked at are cut."""
        turned_down = self._turned_down()
        fresh = [h for h in found if h.lines not in turned_down]
        if len(fresh) < len(found):
            self.counters.refused += len(found) - len(fresh)
        if not fresh:
            return None
        cursor = request.cursor - region_start
        hunk = None
        for whole in fresh:
            if whole.end < cursor:
                continue  # cut, it ends no later
            cut = trimmed(region, whole)
            if cut.end >= cursor:
                hunk = cut
                break
        if hunk is None:
            hunk = trimmed(region, fresh[-1])
        suggestion = Suggestion(
            id=f"ne-{next(self._ids)}", uri=request.uri, version=request.version,
            start=region_start + hunk.start, end=region_start + hunk.end, text=hunk.text,
            old=region[hunk.start:hunk.end], lines=hunk.lines)
        self._shown[suggestion.id] = suggestion
        return suggestion

    def _from_prediction(self, slot: _Slot, request: NextEditRequest) -> Suggestion | None:
        """The next hunk of the last rewrite, when the document is that rewrite's start with
        some of its hunks applied and nothing else changed."""
        prediction = slot.prediction
        if prediction is None:
            return None
        text = request.text
        before, after = prediction.before, prediction.after
        if not (len(text) >= len(before) + len(after) and text.startswith(before)
                and text.endswith(after)):
            slot.prediction = None
            return None
        region = text[len(before):len(text) - len(after)]
        left = line_hunks(region, prediction.new_region)
        keys = Counter(h.lines for h in left)
        if not left or not keys < prediction.hunks:
            slot.prediction = None  # all applied, or the person changed something else
            return None
        return self._pick(request, len(before), region, left)

    # --- the model --------------------------------------------------------------------------

    async def _ask(self, prompt: Prompt) -> str | None:
        assert self.client is not None
        loop = asyncio.get_running_loop()
        waiting = loop.call_later(WAITING_AFTER_S, self._waiting)
        try:
            async with asyncio.timeout(self.config.timeout_s):
                answer = await self._stream(prompt)
        except BackendError as exc:
            self.counters.errors += 1
            log.warning("next edit failed: %s", exc)
            self._set_status("error", f"{exc} ({exc.hint})")
            return None
        except TimeoutError:
            self.counters.errors += 1
            message = (f"the next-edit model did not answer within "
                       f"{self.config.timeout_s:g} s (next_edit.timeout_s)")
            log.warning("next edit: %s", message)
            self._set_status("error", message)
            return None
        finally:
            waiting.cancel()
        if self.status != "idle":  # told after the answer has gone: it is what the person waits for
            loop.call_later(IDLE_AFTER_S, self._set_status, "idle", "")
        return answer

    async def _stream(self, prompt: Prompt) -> str:
        assert self.client is not None
        config = self.config
        # Stopped at the region's end by the server (the model need not echo the context
        # below, and the connection is kept for the next request); read up to it here too,
        # for a server that ignores `stop`.
        request = FimRequest(model=self.model, mode="template" if prompt.format == "zeta"
                             else "chat", prompt=prompt.text, system=prompt.system,
                             max_tokens=config.max_tokens, temperature=config.temperature,
                             stop=(REGION_END,))
        finish: list[str] = []
        self.counters.model_requests += 1
        self.counters.sent_at.append(time.perf_counter())
        if len(self.counters.sent_at) > 4096:
            del self.counters.sent_at[:2048]
        received: list[str] = []
        tail = ""
        stream = self.client.stream(request, finish)
        ended = False
        try:
            async for piece in stream:
                if not piece:
                    continue  # the finish chunk: read on to the stream's end
                received.append(piece)
                tail = (tail + piece)[-(len(piece) + 64):]
                if region_ended(tail):
                    ended = True
                    break  # the region is written: the rest is context the model echoes
        except BaseException:
            await stream.aclose()  # closes the HTTP response now: the model stops
            raise
        if ended:  # closed beside the answer, not before it: the region is all it needs
            closing = asyncio.ensure_future(stream.aclose())
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)
        elif finish[-1:] == ["stop"]:  # the server stopped at the region's end marker
            received.append(REGION_END)
        self.counters.answered_at.append(time.perf_counter())
        if len(self.counters.answered_at) > 4096:
            del self.counters.answered_at[:2048]
        return "".join(received)

    async def aclose(self) -> None:
        for slot in self._slots.values():
            if slot.task is not None:
                slot.task.cancel()
        if self.client is not None:
            await self.client.aclose()
