"""The person's message of a run: how much room its attachments get in the prompt, the
index's related code, the message rendered with its attachments (``engine/prompt/levels.py``), and
what the session store keeps of it (the person's words, chips, refusals and the review's
notes as fields, images as notes). Called once per run by ``Agent._run``, before the loop."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentls.engine import modes, review_notes
from agentls.engine.events import Frontend, StatusEvent, TurnStarted
from agentls.engine.loop.turns import RunState, SessionState, append_message
from agentls.engine.prompt import levels as context
from agentls.engine.prompt.history import prompt_budget
from agentls.engine.prompt.related_code import related_section
from agentls.engine.run_request import RunRequest
from agentls.llm.messages import Message

if TYPE_CHECKING:
    from agentls.engine.prompt.tokens import TokenEstimator
    from agentls.engine.sessions.store import SessionStore
    from agentls.index.from_settings import IndexHub
    from agentls.llm.backend import Backend
    from agentls.settings.config import Settings
    from agentls.workspace.fence import Workspace

TOOL_SCHEMA_ALLOWANCE = 2_000  # tokens the tool schemas take in a request (about 6 KB)


async def store_user_turn(
    *, settings: Settings, store: SessionStore, estimator: TokenEstimator,
    search_hub: IndexHub, run: RunState, request: RunRequest, frontend: Frontend,
    workspace: Workspace, backend: Backend, state: SessionState, context_tokens: int,
) -> None:
    """Render the run's user message within its room and store it (``run.user_message_id``);
    the front-end hears the notes about trimmed attachments and the turn's start."""
    # What the front-end learned about the last turn's changes (review_notes.py).
    pending = review_notes.pending(store, run.session.id)
    prompt = request.prompt
    room = attachment_room(estimator, context_tokens, state.system, prompt, pending)
    related = None
    if settings.index.chat_context and run.session.mode == "chat":
        # index.chat_context: the index's best matches for the request, within a quarter of
        # the attachments' room (engine/prompt/related_code.py).
        related = await asyncio.to_thread(
            related_section, lambda: search_hub.get(workspace), request.prompt,
            settings.index.chat_context, estimator.count_text, room // 4)
    # Attached files are read and measured: off the event loop too.
    turn = await asyncio.to_thread(
        context.render_turn, prompt, request.attachments, workspace, state.facts,
        estimator.count_text, instructions=state.instructions,
        room_tokens=room - (estimator.count_text(related) if related else 0),
        related=related,
    )
    for note in turn.notes:
        frontend.on_event(StatusEvent(message=note))
    store_request(store, run, request, turn.message, turn.notes, backend, frontend, pending)


def attachment_room(estimator: TokenEstimator, context_tokens: int, system: Sequence[Message],
                    prompt: str, pending: Sequence[str] = ()) -> int:
    """Tokens the turn's attachments may take: half of what the prompt budget leaves after
    the earlier levels, the request (with its notes) and the tool schemas (the rest is for
    the history and the tool results of the turn)."""
    used = sum(estimator.count_text(m.content or "") for m in system)
    used += estimator.count_text(prompt) + TOOL_SCHEMA_ALLOWANCE
    used += sum(estimator.count_text(note) for note in pending)
    return max(0, prompt_budget(context_tokens) - used) // 2


def store_request(store: SessionStore, run: RunState, request: RunRequest, message: Message,
                  trimmed: Sequence[str], backend: Backend, frontend: Frontend,
                  notes: Sequence[str]) -> None:
    """Store the turn's request with what the history shows of it (the person's words,
    the chips, refusals and the review's notes as fields), and tell the front-end. The
    model reads the notes first (engine/review_notes.py); they are told once."""
    chips: list[dict[str, Any]] = []
    if request.chips:  # a turn with no attachment does not import their resolver
        from agentls.engine.prompt.references import mark_trimmed

        chips = [c.to_dict() for c in mark_trimmed(request.chips, trimmed)]
    refused = [r.to_dict() for r in request.refused]
    mode = modes.of_session(run.session).id
    metadata: dict[str, Any] = {"prompt": request.prompt, "run_id": run.run_id,
                                "model": run.model, "backend": backend.name, "mode": mode}
    for key, value in (("attachments", chips), ("refused", refused),
                       ("notes", list(notes)), ("trimmed", list(trimmed))):
        if value:
            metadata[key] = value
    sent = review_notes.for_model(message, notes)
    if request.images:  # sent now; the store (and later turns) keep a note of each
        sent = dataclasses.replace(sent, images=tuple(request.images))
        message = dataclasses.replace(message, content=(message.content or "") + "".join(
            f"\n[an image ({i.mime_type}, {len(i.data) * 3 // 4 // 1024} KB) was attached "
            "here; it was shown to the model in that turn only]" for i in request.images))
        metadata["images"] = len(request.images)
    run.user_message_id = append_message(store, run, message, metadata, sent=sent)
    if notes:  # kept on the message now, not told again
        review_notes.clear(store, run.session.id)
    frontend.on_event(TurnStarted(
        prompt=request.prompt, attachments=tuple(chips), refused=tuple(refused),
        notes=tuple(notes), trimmed=tuple(trimmed),
        model=run.model, backend=backend.name, mode=mode))
