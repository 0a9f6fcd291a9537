"""`agentls loop`: the completion protocols and the guardrails, end to end."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.cli.headless_helpers import (
    agentls,
    call,
    last_json,
    write,
)
from tests.cli.test_run import normalised

from agentls.devtools.replay.command import ReplayServer

SNAPSHOT = Path(__file__).parent / "snapshots" / "loop_result.json"
FIX = call("edit_file", "e1", path="src/calc.py",
           edits=[{"search": "return a - b", "replace": "return a + b"}])


@pytest.fixture
def task(tmp_path: Path) -> Path:
    return write(tmp_path / "task.md", "Make add() add.\n")


def loop(task: Path, project: Path, env: dict[str, str], *flags: str
         ) -> subprocess.CompletedProcess[str]:
    return agentls("loop", str(task), "--cwd", str(project), "--json", *flags, env=env)


def on(iteration: int, reply: dict[str, Any], *, after_tools: bool | None = None,
       **extra: Any) -> dict[str, Any]:
    """A step answering iteration ``iteration`` of the loop."""
    match: dict[str, Any] = {"user": f"iteration {iteration} of"}
    if after_tools is not None:
        match["tool_results"] = after_tools
    return {"match": match, "reply": reply, **extra}


def user_prompts(server: ReplayServer) -> list[str]:
    """The last user message of every request the server received."""
    prompts = []
    for request in server.requests:
        users = [m["content"] for m in request.body["messages"] if m["role"] == "user"]
        prompts.append(users[-1])
    return prompts


# --- marker -----------------------------------------------------------------------------------


def test_marker_loop_runs_until_a_final_done_line(
        server: ReplayServer, env: dict[str, str], project: Path, task: Path) -> None:
    server.load({"steps": [
        on(1, {"text": "I looked at calc.py; add subtracts. Next: fix it."}),
        on(2, {"tool_calls": [FIX]}, after_tools=False),
        on(2, {"text": "Fixed add.\nDONE\n"}, after_tools=True),
    ]})
    done = loop(task, project, env, "--completion", "marker")
    assert done.returncode == 0, done.stderr
    result = last_json(done.stdout)
    assert result["stopReason"] == "done" and len(result["iterations"]) == 2
    assert [i["completion"]["status"] for i in result["iterations"]] == ["continue", "done"]
    assert result["applied"] and result["changes"][0]["path"] == "src/calc.py"
    assert (project / "src" / "calc.py").read_text().endswith("return a + b\n")
    second = user_prompts(server)[1]
    assert "iteration 2 of at most" in second and "Make add() add." in second
    assert "add subtracts. Next: fix it." in second  # the previous output carries over
    assert "exactly DONE" in second


def test_marker_is_strict_about_the_final_line(
        server: ReplayServer, env: dict[str, str], project: Path, task: Path) -> None:
    server.load({"steps": [on(1, {"text": "DONE\nbut one more thing"}),
                           on(2, {"text": "The task is DONE."}),
                           on(3, {"text": "**DONE**"})]})
    done = loop(task, project, env, "--completion", "marker", "--max-iterations", "3")
    assert done.returncode == 4, done.stderr
    result = last_json(done.stdout)
    assert result["stopReason"] == "max-iterations" and len(result["iterations"]) == 3


# --- json ----------------------------------------------------------------------------------------


def test_json_loop_carries_summary_and_next_and_reads_the_last_object(
        server: ReplayServer, env: dict[str, str], project: Path, task: Path) -> None:
    first = ('Read the code.\n{"status": "continue", "summary": "found the bug in add()", '
             '"next": "swap the minus for a plus"}\nI will carry on next time, promise.')
    second = (
        "Here is the report.\n```json\n"
        '{"status": "continue", "summary": "draft"}\n```\n'
        "Final status:\n```json\n"
        '{"status": "done", "summary": "replaced {a - b} with {a + b} in \\"calc\\"", '
        '"next": null, "details": {"files": ["src/calc.py"]}}\n```\n'
        "Thanks for reading."
    )
    server.load({"steps": [
        on(1, {"text": first}),
        on(2, {"tool_calls": [FIX]}, after_tools=False),
        on(2, {"text": second}, after_tools=True),
    ]})
    done = loop(task, project, env, "--completion", "json")
    assert done.returncode == 0, done.stderr
    result = last_json(done.stdout)
    assert result["completion"] == {
        "mode": "json", "status": "done", "summary": 'replaced {a - b} with {a + b} in "calc"',
        "next": None, "problem": None}
    prompt = user_prompts(server)[1]
    assert "found the bug in add()" in prompt and "swap the minus for a plus" in prompt


def test_invalid_json_exit_65(server: ReplayServer, env: dict[str, str], project: Path,
                              task: Path) -> None:
    server.load({"steps": [on(1, {"text": "All good, I think. {status: done}"})]})
    done = loop(task, project, env, "--completion", "json")
    assert done.returncode == 65, done.stderr
    result = last_json(done.stdout)
    assert result["stopReason"] == "invalid-json" and result["status"] == "failed"
    assert "status" in result["error"]["message"]
    assert len(server.requests) == 1  # stops at once, no second iteration


def test_json_status_error_exit_1(server: ReplayServer, env: dict[str, str], project: Path,
                                  task: Path) -> None:
    server.load({"steps": [on(1, {"text": '{"status": "error", "summary": "no calc.py"}'})]})
    done = loop(task, project, env, "--completion", "json")
    assert done.returncode == 1
    result = last_json(done.stdout)
    assert result["stopReason"] == "agent-error" and "no calc.py" in result["error"]["message"]


# --- guardrails ----------------------------------------------------------------------------------


def test_no_progress_on_nearly_identical_outputs_exit_3(
        server: ReplayServer, env: dict[str, str], project: Path, task: Path) -> None:
    server.load({"steps": [
        on(n, {"text": f"Still checking calc.py, attempt {n}; nothing changed yet."})
        for n in range(1, 6)
    ]})
    done = loop(task, project, env, "--no-progress-limit", "3", "--max-iterations", "5")
    assert done.returncode == 3, done.stderr
    result = last_json(done.stdout)
    assert result["stopReason"] == "no-progress" and len(result["iterations"]) == 3
    assert "changed no file" in result["error"]["message"]


def test_same_words_with_new_changes_is_progress(
        server: ReplayServer, env: dict[str, str], project: Path, task: Path) -> None:
    steps = []
    for n in range(1, 4):
        steps.append(on(n, {"tool_calls": [call("write_file", f"w{n}", path=f"notes/{n}.txt",
                                                content=f"note {n}\n")]}, after_tools=False))
        steps.append(on(n, {"text": "Wrote another note."}, after_tools=True))
    server.load({"steps": steps})
    done = loop(task, project, env, "--no-progress-limit", "2", "--max-iterations", "3")
    assert done.returncode == 4, done.stderr
    result = last_json(done.stdout)
    assert result["stopReason"] == "max-iterations"
    assert [c["path"] for c in result["changes"]] == ["notes/1.txt", "notes/2.txt",
                                                      "notes/3.txt"]
    assert all(i["changed"] for i in result["iterations"])
    assert (project / "notes" / "3.txt").read_text() == "note 3\n"


def test_max_iterations_exit_4_reports_each_iteration(
        server: ReplayServer, env: dict[str, str], project: Path, task: Path) -> None:
    server.load({"steps": [on(1, {"text": "step one"}), on(2, {"text": "step two, other"})]})
    done = loop(task, project, env, "--max-iterations", "2")
    assert done.returncode == 4
    result = last_json(done.stdout)
    assert [i["index"] for i in result["iterations"]] == [1, 2]
    for iteration in result["iterations"]:
        assert iteration["usage"]["totalTokens"] > 0 and iteration["durationMs"] >= 0
    assert result["usage"]["totalTokens"] == sum(
        i["usage"]["totalTokens"] for i in result["iterations"])


def test_overall_timeout_exit_75(server: ReplayServer, env: dict[str, str], project: Path,
                                 task: Path) -> None:
    server.load({"steps": [on(1, {"text": "first"}),
                           on(2, {"text": "second", "first_delay_s": 30})]})
    done = loop(task, project, env, "--timeout", "1s")
    assert done.returncode == 75, done.stderr
    assert last_json(done.stdout)["stopReason"] == "timeout"


def test_loop_json_snapshot(server: ReplayServer, env: dict[str, str], project: Path,
                            task: Path) -> None:
    server.load({"steps": [
        on(1, {"text": '{"status": "continue", "summary": "looked", "next": "fix"}'}),
        on(2, {"tool_calls": [FIX]}, after_tools=False),
        on(2, {"text": '{"status": "done", "summary": "fixed"}'}, after_tools=True),
    ]})
    done = loop(task, project, env, "--completion", "json")
    assert done.returncode == 0, done.stderr
    assert normalised(last_json(done.stdout)) == json.loads(SNAPSHOT.read_text()), (
        f"--json changed shape; if on purpose, update {SNAPSHOT} and docs/HEADLESS.md")


def test_artifacts_transcript_records_each_iteration(
        server: ReplayServer, env: dict[str, str], project: Path, task: Path) -> None:
    server.load({"steps": [on(1, {"text": "one"}), on(2, {"text": "two\nDONE"})]})
    done = loop(task, project, env, "--artifacts")
    assert done.returncode == 0, done.stderr
    folder = Path(last_json(done.stdout)["artifactsDir"])
    lines = [json.loads(x) for x in (folder / "transcript.ndjson").read_text().splitlines()]
    completions = [x for x in lines if x["kind"] == "completion"]
    assert [(x["loopIteration"], x["status"]) for x in completions] == [(1, "continue"),
                                                                         (2, "done")]
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["options"]["completionMode"] == "marker"
    assert meta["options"]["loopMaxIterations"] == 25
