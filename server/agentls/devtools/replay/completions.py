"""``POST /v1/completions`` of the scripted model server: fill-in-the-middle requests
(``prompt``, ``suffix``, ``stop``, ``max_tokens``, ``stream``), answered from the script's steps
whose ``match`` names ``prompt`` / ``suffix`` (or names nothing chat-only). A script with
``completions_suffix: false`` refuses ``suffix`` with HTTP 400, as vLLM does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from agentls.devtools.replay.requests import ChatView, CompletionView
from agentls.devtools.replay.script import Script, Step
from agentls.devtools.replay.usage import TOKEN, count_tokens
from agentls.devtools.replay.wire import (
    Answer,
    StreamAnswer,
    error_answer,
    json_bytes,
    scripted_error_answer,
)

Select = Callable[[ChatView | CompletionView], tuple[Script, Step | None]]


def completion_answer(script: Script, body: Mapping[str, Any], select: Select,
                      next_number: Callable[[], int]
                      ) -> tuple[Answer | StreamAnswer, int | None]:
    """The answer to one ``/v1/completions`` request and the index of its step."""
    prompt = body.get("prompt")
    if not (isinstance(prompt, str) or (
            isinstance(prompt, list) and all(isinstance(p, str) for p in prompt))):
        return error_answer(400, "Missing required parameter: 'prompt'.", param="prompt",
                            code="missing_required_parameter"), None
    if body.get("suffix") is not None and not script.completions_suffix:
        # What vLLM answers; the script's `completions_suffix: false` plays such a server.
        return error_answer(400, "suffix is not currently supported", param="suffix"), None
    view = CompletionView.of(body)
    script, step = select(view)
    if step is None:
        shown = view.prompt[-200:]
        return error_answer(500, "scripted model: no script step matches this completion "
                            f"request (prompt ending {shown!r}; script {script.source})",
                            type_="server_error", code="no_matching_step"), None
    if step.error is not None:
        return scripted_error_answer(step.error), step.index
    assert step.reply is not None
    source = step.reply.text
    if step.reply.rewrite:
        from agentls.devtools.replay.next_edit_replies import rewritten_excerpt

        source = rewritten_excerpt(view.prompt, step.reply.rewrite)
    text, finish = completion_text(source, body)
    number = next_number()
    prompt_tokens = count_tokens(view.prompt) + count_tokens(view.suffix)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": count_tokens(text),
             "total_tokens": prompt_tokens + count_tokens(text)}
    common = {"id": f"cmpl-scripted{number:08d}", "object": "text_completion",
              "created": int(time.time()), "model": view.model,
              "system_fingerprint": "fp_scripted"}
    reply = step.reply
    if not view.stream:
        payload = {**common, "choices": [{"index": 0, "text": text, "logprobs": None,
                                          "finish_reason": finish}], "usage": usage}
        return Answer(200, json_bytes(payload), delay_s=reply.first_delay_s), step.index
    size = reply.chunk_size
    chunks = [{**common, "choices": [{"index": 0, "text": text[i:i + size],
                                      "logprobs": None, "finish_reason": None}]}
              for i in range(0, len(text), size)]
    chunks.append({**common, "choices": [{"index": 0, "text": "", "logprobs": None,
                                          "finish_reason": finish}]})
    events = [b"data: " + json_bytes(c) + b"\n\n" for c in chunks]
    events.append(b"data: [DONE]\n\n")
    return (StreamAnswer(events, reply.first_delay_s, reply.delay_s, step.drop_after),
            step.index)


def completion_text(text: str, body: Mapping[str, Any]) -> tuple[str, str]:
    """The scripted text as a server would send it for ``body``: cut at the first of its
    ``stop`` strings (finish ``stop``) or at ``max_tokens`` tokens (finish ``length``)."""
    stop = body.get("stop")
    stops = [stop] if isinstance(stop, str) else [s for s in stop or () if isinstance(s, str)]
    cut = min((text.find(s) for s in stops if s and s in text), default=-1)
    if cut >= 0:
        return text[:cut], "stop"
    limit = body.get("max_tokens")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        ends = [m.end() for m in TOKEN.finditer(text)]
        if len(ends) > limit:
            return text[:ends[limit - 1]], "length"
    return text, "stop"
