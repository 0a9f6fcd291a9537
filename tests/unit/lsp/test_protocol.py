"""Parsing AgentLS's own LSP requests, and chat event payloads."""

from __future__ import annotations

from collections import namedtuple

import pytest

from agentls.lsp.services.protocol import ParamsError, chat_event
from agentls.lsp.services.protocol_params import parse_chat_params, parse_run_id


def test_full_chat_params() -> None:
    params = parse_chat_params({
        "prompt": "fix it", "sessionId": "S1", "workDoneToken": 7,
        "context": {
            "uri": "file:///w/a.py",
            "range": {"start": {"line": 1, "character": 0}, "end": {"line": 3, "character": 2}},
            "files": ["file:///w/b.py"],
            "diagnostics": [{"range": {"start": {"line": 2, "character": 4},
                                       "end": {"line": 2, "character": 9}},
                             "message": "undefined name", "severity": 1, "code": 821}],
        },
    })
    assert (params.prompt, params.session_id, params.work_done_token) == ("fix it", "S1", 7)
    assert params.context.range is not None and params.context.range.end.line == 3
    [diagnostic] = params.context.diagnostics
    assert (diagnostic.uri, diagnostic.line, diagnostic.character) == ("file:///w/a.py", 2, 4)
    assert diagnostic.code == "821"


def test_namedtuple_params_are_accepted() -> None:
    Params = namedtuple("Params", ["prompt"])
    assert parse_chat_params(Params("hi")).prompt == "hi"


@pytest.mark.parametrize(("raw", "complaint"), [
    ({}, "non-empty 'prompt'"),
    ({"prompt": "x", "context": {"range": {"start": {"line": 0, "character": 0},
                                           "end": {"line": 0, "character": 1}}}},
     "context.range needs context.uri"),
    ({"prompt": "x", "context": {"uri": "file:///a", "range": {"start": {"line": -1}}}},
     "context.range.start.line must be a non-negative integer"),
    ({"prompt": "x", "context": {"files": "file:///a"}}, "context.files must be a list"),
    ({"prompt": "x", "workDoneToken": True}, "workDoneToken"),
])
def test_bad_chat_params_say_what_is_wrong(raw: object, complaint: str) -> None:
    with pytest.raises(ParamsError, match=complaint):
        parse_chat_params(raw)


def test_run_id_from_object_bare_string_or_command_arguments() -> None:
    assert parse_run_id({"runId": "r1"}) == parse_run_id("r1") == parse_run_id(["r1"]) == "r1"
    with pytest.raises(ParamsError, match="runId"):
        parse_run_id({})


def test_chat_event_payload_is_camel_case_and_keeps_the_envelope() -> None:
    event = chat_event("S", "R", 3, "toolResult",
                       {"call_id": "c1", "ok": True, "kind": "ignored", "seq": 99})
    assert event == {"sessionId": "S", "runId": "R", "seq": 3, "kind": "toolResult",
                     "callId": "c1", "ok": True}
