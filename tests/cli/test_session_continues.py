"""Every session stays continuable (issue 30, item 1): a run whose turn wrote 40 files of
~16 KB each, killed with SIGKILL during its final write to disk, is continued with a one-line
follow-up (`agentls run --session S`) that fits the model's context: the old calls' bulk is
shrunk (call, path and outcome kept, the omission said), the request and the last outcomes
sent. The real `agentls run` twice, the scripted model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.headless_helpers import agentls, call, last_json

from agentls.devtools.replay.command import ReplayServer, count_prompt_tokens

CONTEXT = 32_768
FILES = 40
# Loaded by the first `agentls run` through PYTHONPATH: its write to disk stalls at the last
# file, so the test can kill it there.
STALL = """
import os, time
_real_replace = os.replace
def _stall(src, dst, *args, **kwargs):
    if os.fspath(dst).endswith("gen_LAST.py"):
        open(os.environ["AGENTLS_TEST_STALLED"], "w").close()
        time.sleep(600)
    return _real_replace(src, dst, *args, **kwargs)
os.replace = _stall
""".replace("LAST", str(FILES - 1))


def big_file(k: int) -> str:
    return "".join(f"def handler_{k}_{n}(event):\n    return process(event, {n})\n"
                   for n in range(320))  # ~16 KB


def test_a_follow_up_after_a_killed_turn_of_40_large_writes_fits(
        server: ReplayServer, env: dict[str, str], project: Path, tmp_path: Path) -> None:
    env = {**env, "AGENTLS_BACKENDS__SCRIPTED__CONTEXT_MAX_TOKENS": str(CONTEXT)}
    calls = [call("write_file", f"w{k}", path=f"gen/gen_{k}.py", content=big_file(k))
             for k in range(FILES)]
    assert sum(len(c["arguments"]["content"]) for c in calls) > 40 * 15_000
    server.load({"steps": [
        {"match": {"user": "follow-up"}, "reply": {"text": "Carrying on from the files."}},
        {"match": {"user": "generate", "tool_results": False},
         "reply": {"text": "Writing the handlers.", "tool_calls": calls}},
        {"match": {"user": "generate", "tool": "write_file"},
         "reply": {"text": "Wrote 40 handler modules."}},
    ]})
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(STALL)
    stalled = tmp_path / "stalled"
    killed_env = {**env, "AGENTLS_TEST_STALLED": str(stalled),
                  "PYTHONPATH": os.pathsep.join([str(hooks), env.get("PYTHONPATH", "")])}
    first = subprocess.Popen([sys.executable, "-P", "-m", "agentls", "run", "-p",
                              "generate the handlers", "--cwd", str(project), "--yes"],
                             env=killed_env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not stalled.exists():
            assert first.poll() is None, "agentls run ended before its final write"
            assert time.monotonic() < deadline, "agentls run never reached its final write"
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)  # during the final write: the turn is stored
        first.wait(timeout=10)
    finally:
        if first.poll() is None:
            first.kill()
    listed = agentls("sessions", "--json", "--cwd", str(project), env=env)
    assert listed.returncode == 0, listed.stderr
    session = last_json(listed.stdout)["sessions"][0]["id"]

    done = agentls("run", "-p", "follow-up: now add tests", "--session", session,
                   "--cwd", str(project), "--json", env=env)

    assert done.returncode == 0, done.stdout + done.stderr
    assert last_json(done.stdout)["text"].strip() == "Carrying on from the files."
    body = server.requests[-1].body
    tokens = count_prompt_tokens(body["messages"], body.get("tools", []))
    assert tokens <= CONTEXT * 0.8, tokens  # under the context, with room for the answer
    messages = body["messages"]
    assert messages[-1] == {"role": "user", "content": "follow-up: now add tests"}
    sent_calls = {c["id"]: json.loads(c["function"]["arguments"])
                  for m in messages for c in m.get("tool_calls") or []}
    for k in range(FILES):  # every call stays, with its path; the bulk is said to be omitted
        assert sent_calls[f"w{k}"]["path"] == f"gen/gen_{k}.py"
        assert "characters omitted from this earlier call" in sent_calls[f"w{k}"]["content"]
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert set(results) == {f"w{k}" for k in range(FILES)}  # and every outcome
