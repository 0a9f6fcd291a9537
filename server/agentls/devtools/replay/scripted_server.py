"""The scripted model server: the script's state and the answer to each request.

The HTTP side (connections, chunked streams, cuts) is in :mod:`agentls.devtools.replay.http`;
the behaviour is documented in :mod:`agentls.devtools.replay.command`.
"""

from __future__ import annotations

import base64
import dataclasses
import hmac
import logging
import struct
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from agentls.devtools.replay.completions import completion_answer
from agentls.devtools.replay.http import ReplayHTTPServer
from agentls.devtools.replay.requests import (
    ChatView,
    CompletionView,
    RecordedRequest,
    RemainingStep,
    StreamEnd,
)
from agentls.devtools.replay.responses import responses_answer
from agentls.devtools.replay.script import Reply, Script, Step, load_script
from agentls.devtools.replay.usage import (
    count_completion_tokens,
    count_prompt_tokens,
    count_tokens,
    embed_text,
)
from agentls.devtools.replay.wire import (
    Answer,
    StreamAnswer,
    error_answer,
    json_bytes,
    scripted_error_answer,
    stream_deltas,
    text_tool_calls,
)

# The name the server logged under before it was split into modules; callers configure it.
logger = logging.getLogger("agentls.devtools.replay.command")


class ReplayServer:
    """The scripted model server on a background thread (:mod:`agentls.devtools.replay.command`)."""

    def __init__(
        self,
        script: Script | Mapping[str, Any] | str | Path,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._lock = threading.Lock()
        self._script = load_script(script)
        self._uses = [0] * len(self._script.steps)
        self._requests: list[RecordedRequest] = []
        self._host, self._port = host, port
        self._httpd: ReplayHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._counter = 0
        self._created = int(time.time())
        self._stream_ends: list[StreamEnd] = []
        self._in_flight: dict[str, int] = {}
        self._most_in_flight: dict[str, int] = {}
        # Per streamed answer, when each of its SSE events was written (time.perf_counter()):
        # benchmarks measure from the model's first token, not from the request.
        self.stream_times: list[list[float]] = []

    # lifecycle ---------------------------------------------------------------

    def start(self) -> ReplayServer:
        if self._httpd is not None:
            raise RuntimeError("the scripted model server was already started")
        self._httpd = ReplayHTTPServer((self._host, self._port), self)
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
            name=f"replay-server-{self._port}", daemon=True,
        )
        self._thread.start()
        logger.debug("scripted model server listening on %s", self.base_url)
        return self

    def stop(self) -> None:
        httpd = self._httpd
        if httpd is None or self._stopping.is_set():
            return
        self._stopping.set()  # wakes handlers sleeping through scripted delays
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def serve_forever(self) -> None:
        """Serve (starting if needed) until :meth:`stop` or KeyboardInterrupt."""
        if self._httpd is None:
            self.start()
        try:
            while not self._stopping.wait(0.5):
                pass
        finally:
            self.stop()

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # state -------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("start() the scripted model server before asking for its URL")
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}/v1"

    @property
    def script(self) -> Script:
        return self._script

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def closed_streams(self) -> list[StreamEnd]:
        """Streams the client closed before their end (the time the server saw it)."""
        with self._lock:
            return [end for end in self._stream_ends if end.closed]

    @property
    def stream_ends(self) -> list[StreamEnd]:
        """Every streamed answer's end, whole or closed by the client, in order."""
        with self._lock:
            return list(self._stream_ends)

    def reset_in_flight(self) -> None:
        """Count the most requests in flight afresh from now on."""
        with self._lock:
            self._most_in_flight = dict(self._in_flight)

    def in_flight(self, path: str = "/v1/completions") -> int:
        """Requests to ``path`` being answered now."""
        with self._lock:
            return self._in_flight.get(path, 0)

    def most_in_flight(self, path: str = "/v1/completions") -> int:
        """The most requests to ``path`` that were being answered at once."""
        with self._lock:
            return self._most_in_flight.get(path, 0)

    def load(self, script: Script | Mapping[str, Any] | str | Path) -> None:
        """Replace the script; step counters start again (recorded requests are kept)."""
        loaded = load_script(script)
        with self._lock:
            self._script, self._uses = loaded, [0] * len(loaded.steps)

    def remaining_steps(self) -> list[RemainingStep]:
        """Steps with a finite ``times`` that still have uses left ("*" steps never count)."""
        with self._lock:
            return [
                RemainingStep(step.index, step.name, step.times - used)
                for step, used in zip(self._script.steps, self._uses, strict=True)
                if step.times is not None and used < step.times
            ]

    # answering (called from handler threads) ----------------------------------

    def _next_number(self) -> int:
        with self._lock:
            self._counter += 1
            return self._counter

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _stream_ended(self, end: StreamEnd) -> None:
        with self._lock:
            self._stream_ends.append(end)

    def _enter(self, path: str) -> None:
        with self._lock:
            now = self._in_flight.get(path, 0) + 1
            self._in_flight[path] = now
            self._most_in_flight[path] = max(now, self._most_in_flight.get(path, 0))

    def _leave(self, path: str) -> None:
        with self._lock:
            self._in_flight[path] = self._in_flight.get(path, 1) - 1

    def _select(self, view: ChatView | CompletionView) -> tuple[Script, Step | None]:
        with self._lock:
            script = self._script
            for i, step in enumerate(script.steps):
                if (step.times is None or self._uses[i] < step.times) and view.fits(step.match):
                    self._uses[i] += 1
                    return script, step
            return script, None

    def _answer(self, method: str, path: str, headers: Mapping[str, str], body: Any
                ) -> tuple[Answer | StreamAnswer, int | None]:
        """The response to one request and the index of the step that produced it."""
        script = self._script
        route = (method, path.rstrip("/"))
        known = route in {("POST", "/v1/chat/completions"), ("POST", "/v1/embeddings"),
                          ("POST", "/v1/completions"), ("POST", "/v1/responses"),
                          ("GET", "/v1/models")} or (
            method == "GET" and path.startswith("/v1/models/"))
        if not known:
            return error_answer(404, f"Invalid URL ({method} {path})"), None
        if script.api_key is not None:
            denied = self._check_key(script.api_key, headers.get("authorization", ""))
            if denied is not None:
                return denied, None
        if route == ("GET", "/v1/models"):
            data = [self._model_object(m) for m in script.models]
            return Answer(200, json_bytes({"object": "list", "data": data})), None
        if method == "GET":
            model = path[len("/v1/models/"):]
            if not self._model_allowed(script, model):
                return self._model_not_found(model), None
            return Answer(200, json_bytes(self._model_object(model))), None
        if not isinstance(body, dict):
            return error_answer(
                400, "We could not parse the JSON body of your request. (HINT: This likely "
                "means you aren't using your HTTP library correctly. The OpenAI API expects a "
                "JSON payload.)"), None
        requested = body.get("model")
        if not isinstance(requested, str) or not requested:
            return error_answer(400, "you must provide a model parameter"), None
        if not self._model_allowed(script, requested):
            return self._model_not_found(requested), None
        if path.rstrip("/") == "/v1/embeddings":
            return self._embeddings(script, body), None
        if path.rstrip("/") == "/v1/completions":
            return completion_answer(script, body, self._select, self._next_number)
        if path.rstrip("/") == "/v1/responses":  # the Codex CLI's API (replay_responses.py)
            return responses_answer(script, body, self._select, self._next_number)
        return self._chat(body)

    @staticmethod
    def _check_key(expected: str, authorization: str) -> Answer | None:
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return error_answer(
                401, "You didn't provide an API key. You need to provide your API key in an "
                "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
        if not hmac.compare_digest(given.strip().encode(), expected.encode()):
            return error_answer(401, "Incorrect API key provided. You can find your API key "
                                "at https://platform.openai.com/account/api-keys.",
                                code="invalid_api_key")
        return None

    @staticmethod
    def _model_allowed(script: Script, model: str) -> bool:
        return script.any_model or model in script.models

    @staticmethod
    def _model_not_found(model: str) -> Answer:
        return error_answer(
            404, f"The model `{model}` does not exist or you do not have access to it.",
            code="model_not_found")

    def _model_object(self, model: str) -> dict[str, Any]:
        return {"id": model, "object": "model", "created": self._created, "owned_by": "scripted"}

    def _embeddings(self, script: Script, body: Mapping[str, Any]) -> Answer:
        raw = body.get("input")
        if isinstance(raw, str) or (
            isinstance(raw, list) and raw and all(isinstance(t, int) for t in raw)
        ):
            raw = [raw]
        if not isinstance(raw, list) or not raw:
            return error_answer(400, "'input' must be a non-empty string or array", param="input")
        dimensions = body.get("dimensions") or script.embedding_dimensions
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
            return error_answer(400, f"Invalid 'dimensions': {dimensions!r}", param="dimensions")
        data, tokens = [], 0
        for index, item in enumerate(raw):
            if isinstance(item, list):
                text, tokens = " ".join(f"t{t}" for t in item), tokens + len(item)
            elif isinstance(item, str):
                text, tokens = item, tokens + count_tokens(item)
            else:
                return error_answer(400, f"Invalid 'input[{index}]': expected a string or "
                                    "token array", param="input")
            vector = embed_text(text, dimensions)
            encoded: Any = vector
            if body.get("encoding_format") == "base64":
                encoded = base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        payload = {"object": "list", "data": data, "model": body["model"], "usage": usage}
        return Answer(200, json_bytes(payload))

    def _chat(self, body: Mapping[str, Any]) -> tuple[Answer | StreamAnswer, int | None]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return error_answer(400, "Missing required parameter: 'messages'.",
                                param="messages", code="missing_required_parameter"), None
        view = ChatView.of(body)
        script, step = self._select(view)
        if step is None:
            shown = view.user if len(view.user) <= 200 else view.user[:200] + "…"
            return error_answer(500, "scripted model: no script step matches this request "
                                f"(last user message: {shown!r}; script {script.source})",
                                type_="server_error", code="no_matching_step"), None
        if step.error is not None:
            return scripted_error_answer(step.error), step.index
        assert step.reply is not None  # validated on load: a step has a reply or an error
        reply = step.reply
        if reply.rewrite:
            from agentls.devtools.replay.next_edit_replies import rewritten_excerpt

            reply = dataclasses.replace(reply, text=rewritten_excerpt(view.user,
                                                                      reply.rewrite))
        return self._reply(step, reply, body, view), step.index

    def _reply(self, step: Step, reply: Reply, body: Mapping[str, Any], view: ChatView
               ) -> Answer | StreamAnswer:
        number = self._next_number()
        if reply.text_tool_calls:  # the calls in the text, no native calls: finish "stop"
            reply = dataclasses.replace(
                reply, tool_calls=(), text_tool_calls="",
                text=text_tool_calls(reply.text, reply.tool_calls, reply.text_tool_calls))
        call_ids = [c.id or f"call_{number}_{i}" for i, c in enumerate(reply.tool_calls)]
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        usage: dict[str, Any] = {
            "prompt_tokens": count_prompt_tokens(body["messages"], body.get("tools")),
            "completion_tokens": count_completion_tokens(
                reply.text, [(c.name, c.arguments) for c in reply.tool_calls]),
        }
        usage.update(reply.usage or {})
        if "total_tokens" not in (reply.usage or {}):
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        common = {"id": f"chatcmpl-scripted{number:08d}", "created": int(time.time()),
                  "model": view.model, "system_fingerprint": "fp_scripted"}
        if not view.stream:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": (reply.text if (reply.text or not reply.tool_calls)
                            and not reply.refusal else None),
                "refusal": reply.refusal or None,
            }
            if reply.tool_calls:
                message["tool_calls"] = [
                    {"id": cid, "type": "function",
                     "function": {"name": c.name, "arguments": c.arguments}}
                    for c, cid in zip(reply.tool_calls, call_ids, strict=True)
                ]
            payload = {**common, "object": "chat.completion", "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            ], "usage": usage}
            data = json_bytes(payload)
            cut = len(data) // 2 if step.drop_after is not None else None
            return Answer(200, data, delay_s=reply.first_delay_s, cut_after_bytes=cut)
        options = body.get("stream_options")
        with_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        chunks: list[dict[str, Any]] = [
            {**common, "object": "chat.completion.chunk", "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]}
            for delta in stream_deltas(reply, call_ids)
        ]
        if reply.empty_first_chunk:  # Azure OpenAI's first chunk: prompt_filter_results only
            chunks.insert(0, {**common, "object": "chat.completion.chunk", "choices": [],
                              "prompt_filter_results": []})
        chunks.append({**common, "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}]})
        if with_usage:
            for chunk in chunks:
                chunk["usage"] = None
            chunks.append({**common, "object": "chat.completion.chunk", "choices": [],
                           "usage": usage})
        events = [b"data: " + json_bytes(c) + b"\n\n" for c in chunks]
        if reply.done_marker:  # some servers and proxies end the stream without it
            events.append(b"data: [DONE]\n\n")
        return StreamAnswer(events, reply.first_delay_s, reply.delay_s, step.drop_after)
