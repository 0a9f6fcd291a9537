"""The scripted model server: a real OpenAI-compatible HTTP server driven by a script.

It is not a model. Tests, the demo and the benchmarks point the real ``openai`` client at
it (``base_url`` = :attr:`ReplayServer.base_url`) and it answers each request with the
next script step that fits: streamed text, parallel tool calls split across chunks, an
HTTP error with status, body and headers, delays, or a connection cut mid-stream.

Endpoints (all under ``/v1``)
-----------------------------
``POST /v1/chat/completions``
    ``stream: true`` answers Server-Sent Events (``data: {chat.completion.chunk}`` …
    ``data: [DONE]``) with ``Transfer-Encoding: chunked``, one HTTP chunk per event, so a
    dropped connection is an incomplete chunked body to the client, not a clean EOF.
    The first event carries ``delta.role`` (with ``content: ""``, or with the first tool
    call when the reply has no text), then text pieces, then tool calls (the first delta
    of a call carries ``index``, ``id``, ``type``, ``function.name`` and ``arguments: ""``;
    later deltas carry ``index`` and an ``arguments`` piece), then an empty delta with
    ``finish_reason``. With ``stream_options.include_usage`` every chunk has
    ``"usage": null`` and a last chunk has ``choices: []`` and the usage. Without
    ``stream`` the answer is one ``chat.completion`` object with ``usage``.
``POST /v1/responses``
    The Responses API, as the Codex CLI speaks it (``agentls.devtools.replay.responses``):
    ``input`` items read as chat messages for ``match``; the reply streams as
    ``response.created`` / ``response.output_text.delta`` / ``response.output_item.done``
    (a ``message``, then one ``function_call`` per tool call) / ``response.completed``.
``GET /v1/models``, ``GET /v1/models/{id}``
    The script's model list (``owned_by: "scripted"``).
``POST /v1/embeddings``
    Deterministic vectors: lower-cased ``\\w+`` tokens are hashed (BLAKE2b) into
    ``dimensions`` buckets with a hashed sign, then L2-normalised, so texts sharing words
    get similar vectors. ``input`` is a string, a list of strings, or token arrays;
    ``encoding_format`` ``float`` or ``base64`` (little-endian float32; the openai client
    asks for base64 by default); ``dimensions`` honoured. Script steps are not consumed.
Anything else
    404 ``Invalid URL (METHOD /path)`` in OpenAI's error shape
    ``{"error": {"message", "type", "param", "code"}}``.

Checks, in OpenAI's order: the bearer key when the script sets ``api_key`` (401,
``invalid_api_key``; the key is never echoed, printed or logged), then the model
(404 ``model_not_found``: "The model `x` does not exist or you do not have access to
it."), then the script. A chat request no step fits gets HTTP 500 with code
``no_matching_step`` and the message "scripted model: no script step matches this
request (last user message: …)". Note that a client with retries retries a 500.

Usage (token counts)
--------------------
``T(text)`` = number of matches of the regex ``\\w+|[^\\w\\s]`` (words and single
punctuation marks; whitespace is free).

* ``prompt_tokens`` = Σ over messages of ``4 + T(content)`` (content: the string, or the
  ``text`` of each part joined with newlines) ``+ Σ over its tool_calls of
  T(function.name) + T(function.arguments)``; plus ``T(json.dumps(tools))`` when the
  request has tools.
* ``completion_tokens`` = ``T(reply text) + Σ over tool calls of T(name) + T(arguments)``.
* ``total_tokens`` = the sum. A step's ``reply.usage`` overrides any of these (and may add
  ``prompt_tokens_details`` / ``completion_tokens_details``); embeddings report
  ``prompt_tokens`` = Σ T(input) (or the token-array lengths).

:func:`count_tokens`, :func:`count_prompt_tokens` and :func:`count_completion_tokens`
implement exactly this.

Script schema (YAML or JSON file, or a dict)
--------------------------------------------
.. code-block:: yaml

    models: [scripted-model]   # served by /v1/models; "*" in the list (or models: "*")
                               # accepts any model name. Default: [scripted-model]
    api_key: null              # if set, requests need "Authorization: Bearer <api_key>"
    embedding_dimensions: 384  # default vector size for /v1/embeddings
    defaults:                  # defaults for every reply
      chunk_size: 8            # characters per streamed text or arguments piece (>= 1)
      delay_s: 0               # seconds before each streamed chunk after the first
      first_delay_s: 0         # seconds before the first chunk (time to first token)
    steps:
      - name: greeting         # optional; shown by remaining_steps() and in errors
        match:                 # every key optional; all given keys must fit
          user: "hello"        # substring of the last user message, or "/regex/" (search)
          system: "/summar/"   # same, over the system messages
          tool_results: true   # true: the request ends with tool results (role "tool");
                               # false: it does not
          tool: read_file      # one of those trailing tool results answers a call to
                               # this tool (names found via tool_call_id)
          model: scripted-model
          stream: true         # streaming request or not
          tools: true          # the request offers tools (false: it sends none)
        times: 1               # requests this step answers; default 1; "*" = unlimited
        reply:
          text: "Hello"
          reasoning: "..."     # optional: streamed before the text as delta.reasoning_content
          refusal: "I can't"   # optional: OpenAI's refusal field instead of content and calls
          tool_calls:          # parallel calls; index = position in this list
            - {id: call_1, name: read_file, arguments: {path: a.py}}  # id optional
            - {name: grep, arguments: '{"pattern": '}   # a string is sent verbatim
          finish_reason: stop  # default: tool_calls if there are calls, else stop
          usage: {prompt_tokens: 10, completion_tokens: 2}   # optional override
          chunk_size: 4        # per-reply overrides of defaults
          delay_s: 0.01
          first_delay_s: 0.2
          interleave_tool_calls: false   # true: argument pieces of parallel calls alternate
          # The shapes real servers send (replay_wire.stream_deltas and text_tool_calls
          # cite the servers' code for each):
          call_shape: split    # whole: each call in one delta, arguments whole (Ollama)
          reasoning_field: reasoning_content   # or reasoning (Ollama, newer vLLM)
          arguments_as: string # object: a JSON object (proxies); double: encoded twice
          omit_call_ids: false # true: calls without "id"
          same_index: false    # true: every call under index 0
          empty_first_chunk: false   # true: a first chunk with "choices": [] (Azure)
          done_marker: true    # false: no "data: [DONE]" at the end
          text_tool_calls: hermes   # the calls written in the text, no native calls,
                               # finish "stop" (a server without its tool parser):
                               # hermes <tool_call>{...}</tool_call>, mistral
                               # [TOOL_CALLS][...], mistral_v11 [TOOL_CALLS]name{...},
                               # json (the bare object), fenced (in a ```json block)
        drop_after: 3          # optional, with reply: send 3 SSE events, then cut the
                               # connection (no [DONE], no terminating chunk). 0 = cut
                               # right after the headers; the first event is the role.
                               # A non-streaming request gets half its body, then the cut.
      - match: {tools: true}   # Ollama with a model whose template has no tools:
        error: {status: 400, body: {error: {message: "registry.ollama.ai/library/gemma3:4b
          does not support tools", type: api_error, param: null, code: null}}}
                               # (the body Ollama's /v1 answers, ollama/ollama#6027)
      - match: {user: "busy"}
        error:                 # instead of reply
          status: 429
          body: {error: {message: "Slow down", type: requests, param: null,
                         code: rate_limit_exceeded}}   # or a string sent verbatim;
                               # omitted: OpenAI's usual body for that status
          headers: {Retry-After: "1"}
          delay_s: 0           # before answering

Steps are tried in order; the first one with uses left whose ``match`` fits answers.
Validation happens on load and raises :class:`ScriptError` naming the file, the step and
the problem (unknown keys get a "did you mean" hint).

Python API
----------
.. code-block:: python

    with ReplayServer({"steps": [{"reply": {"text": "hi"}}]}) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        ...
        assert server.remaining_steps() == []
        assert server.requests[0].headers["authorization"] == "<redacted>"

Command line: ``python -m agentls.devtools.replay.command --script FILE --port N [--host H]``.

Modules: ``replay_script`` (schema, validation), ``replay_tokens`` (token counts,
embeddings), ``replay_requests`` (recorded requests, step matching), ``replay_wire``
(errors, SSE deltas), ``replay_server`` (:class:`ReplayServer`), ``replay_http`` (the
HTTP side); this module is the public API and the command line.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from agentls.devtools.replay.http import REDACTED as REDACTED
from agentls.devtools.replay.requests import RecordedRequest, RemainingStep, last_user_text
from agentls.devtools.replay.script import DEFAULT_MODEL as DEFAULT_MODEL
from agentls.devtools.replay.script import FINISH_REASONS as FINISH_REASONS
from agentls.devtools.replay.script import Reply as Reply
from agentls.devtools.replay.script import Script, ScriptError, load_script
from agentls.devtools.replay.script import ScriptedError as ScriptedError
from agentls.devtools.replay.script import ScriptedToolCall as ScriptedToolCall
from agentls.devtools.replay.script import Step as Step
from agentls.devtools.replay.script import StepMatch as StepMatch
from agentls.devtools.replay.script import TextPattern as TextPattern
from agentls.devtools.replay.scripted_server import ReplayServer
from agentls.devtools.replay.usage import (
    DEFAULT_EMBEDDING_DIMENSIONS as DEFAULT_EMBEDDING_DIMENSIONS,
)
from agentls.devtools.replay.usage import (
    count_completion_tokens,
    count_prompt_tokens,
    count_tokens,
    embed_text,
)

__all__ = [
    "RecordedRequest",
    "RemainingStep",
    "ReplayServer",
    "Script",
    "ScriptError",
    "count_completion_tokens",
    "count_prompt_tokens",
    "count_tokens",
    "embed_text",
    "last_user_text",
    "load_script",
    "main",
]


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    """``agentls replay --script FILE --port N [--host H]``: serve until Ctrl-C."""
    parser = argparse.ArgumentParser(
        prog="agentls replay",
        description="Serve a scripted OpenAI-compatible model (not a real model) for tests "
                    "and demos.",
    )
    parser.add_argument("--script", required=True, type=Path, help="YAML or JSON script file")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="interface (default: 127.0.0.1)")
    args = parser.parse_args(argv)
    try:
        server = ReplayServer(args.script, host=args.host, port=args.port)
        server.start()
    except ScriptError as exc:
        print(f"agentls replay: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"agentls replay: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
              " (is another server using that port? try --port 0)", file=sys.stderr)
        return 1
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop cleanly on kill too
    print(f"scripted model server (not a real model) listening on {server.base_url}",
          file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
