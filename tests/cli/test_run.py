"""`agentls run` as CI runs it: a subprocess, a real workspace, the scripted model server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.cli.headless_helpers import (
    SECRET,
    agentls,
    call,
    fix_add_steps,
    last_json,
    write,
)

from agentls.devtools.replay.command import ReplayServer

SNAPSHOT = Path(__file__).parent / "snapshots" / "run_result.json"


@pytest.fixture
def prompt(tmp_path: Path) -> Path:
    return write(tmp_path / "prompt.txt", "Please fix add in src/calc.py\n")


def run(prompt: Path | str, project: Path, env: dict[str, str], *flags: str,
        stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return agentls("run", str(prompt), "--cwd", str(project), *flags, env=env, stdin=stdin)


def tool_results(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["tool_call_id"]: json.loads(m["content"]) for m in body["messages"]
            if m["role"] == "tool"}


# --- success -------------------------------------------------------------------------------------


def test_run_streams_text_writes_the_change_and_lists_it(
        server: ReplayServer, env: dict[str, str], project: Path, prompt: Path) -> None:
    server.load({"api_key": SECRET, "steps": fix_add_steps()})
    done = run(prompt, project, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Looking.\n\nFixed add.\n"
    assert (project / "src" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert "→ read_file path=src/calc.py" in done.stderr
    assert "M src/calc.py  +1 -1" in done.stderr and "wrote 1 file" in done.stderr
    assert done.stderr.splitlines()[-4].startswith("done · ")


def test_prompt_from_stdin(server: ReplayServer, env: dict[str, str], project: Path) -> None:
    server.load({"steps": [{"match": {"user": "from stdin"}, "reply": {"text": "got it"}}]})
    done = run("-", project, env, stdin="a prompt from stdin\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "got it\n"


def test_dry_run_shows_the_diff_and_writes_nothing(
        server: ReplayServer, env: dict[str, str], project: Path, prompt: Path) -> None:
    server.load({"steps": fix_add_steps()})
    before = (project / "src" / "calc.py").read_bytes()
    done = run(prompt, project, env, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "-    return a - b\n+    return a + b\n" in done.stdout
    assert "dry run: 1 file not written" in done.stderr
    assert (project / "src" / "calc.py").read_bytes() == before


def test_quiet_keeps_stderr_empty_on_success(
        server: ReplayServer, env: dict[str, str], project: Path, prompt: Path) -> None:
    server.load({"steps": fix_add_steps()})
    done = run(prompt, project, env, "--quiet")
    assert done.returncode == 0
    assert done.stdout == "Looking.\n\nFixed add.\n" and done.stderr == ""


@pytest.mark.parametrize("flags", [["--quiet"], ["--json", "--quiet"]])
def test_a_quiet_run_that_ends_well_never_imports_rich(
        server: ReplayServer, env: dict[str, str], project: Path, prompt: Path,
        tmp_path: Path, flags: list[str]) -> None:
    """rich costs ~15 ms to import: only a run that draws on stderr pays for it."""
    server.load({"steps": fix_add_steps()})
    seen = tmp_path / "rich-imported.txt"
    code = ("import atexit, sys\n"
            f"atexit.register(lambda: open({str(seen)!r}, 'w').write(str('rich' in sys.modules)))\n"
            "from agentls.cli.main import main\n"
            f"sys.argv = {['agentls', 'run', str(prompt), '--cwd', str(project), *flags]!r}\n"
            "sys.exit(main())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          check=False, timeout=60, start_new_session=True,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert seen.read_text() == "False"
    assert (project / "src" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


# --- --json --------------------------------------------------------------------------------------


def normalised(result: dict[str, Any]) -> dict[str, Any]:
    """The result with what changes from run to run (ids, times, token counts) blanked."""
    out = json.loads(json.dumps(result))
    out["sessionId"] = "<session>" if out["sessionId"] else None
    out["durationMs"] = "<ms>"
    out["artifactsDir"] = "<dir>" if out["artifactsDir"] else None
    out["usage"] = {k: "<n>" for k in out["usage"]}
    for iteration in out["iterations"]:
        iteration.update(runId="<run>", durationMs="<ms>")
        iteration["usage"] = {k: "<n>" for k in iteration["usage"]}
    return out


def test_json_result_snapshot(server: ReplayServer, env: dict[str, str], project: Path,
                              prompt: Path) -> None:
    server.load({"steps": fix_add_steps()})
    done = run(prompt, project, env, "--json")
    assert done.returncode == 0, done.stderr
    result = last_json(done.stdout)
    assert result["usage"]["promptTokens"] > 0 and result["durationMs"] > 0
    assert normalised(result) == json.loads(SNAPSHOT.read_text()), (
        f"--json changed shape; if on purpose, update {SNAPSHOT} and docs/HEADLESS.md")


def test_json_is_the_only_stdout_even_on_failure(
        env: dict[str, str], project: Path, tmp_path: Path) -> None:
    done = run(tmp_path / "missing.txt", project, env, "--json")
    assert done.returncode == 66
    result = last_json(done.stdout)
    assert result["stopReason"] == "prompt-not-found" and result["exitCode"] == 66
    assert result["status"] == "failed" and "missing.txt" in result["error"]["message"]


# --- exit codes ----------------------------------------------------------------------------------


def test_missing_prompt_file_exit_66(env: dict[str, str], project: Path, tmp_path: Path) -> None:
    done = run(tmp_path / "nope.txt", project, env)
    assert done.returncode == 66
    assert "prompt file not found" in done.stderr and "nope.txt" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("step", "code", "reason", "fragment"),
    [
        ({"error": {"status": 400, "body": "bad things"}}, 1, "backend-error", "bad_request"),
        ({"error": {"status": 401}}, 2, "backend-missing", "auth"),
        ({"error": {"status": 404, "body": {"error": {
            "message": "The model `scripted-model` does not exist", "type": "invalid_request_error",
            "param": None, "code": "model_not_found"}}}}, 2, "backend-missing", "model_not_found"),
    ],
)
def test_backend_errors(server: ReplayServer, env: dict[str, str], project: Path, prompt: Path,
                        step: dict[str, Any], code: int, reason: str, fragment: str) -> None:
    server.load({"steps": [step]})
    done = run(prompt, project, env, "--json")
    assert done.returncode == code, done.stderr
    result = last_json(done.stdout)
    assert result["stopReason"] == reason and result["exitCode"] == code
    assert fragment in result["error"]["kind"] + result["error"]["message"]
    assert result["error"]["hint"]


def test_unreachable_backend_exit_2(env: dict[str, str], project: Path, prompt: Path) -> None:
    env = {**env, "AGENTLS_BACKENDS__SCRIPTED__BASE_URL": "http://127.0.0.1:9/v1",
           "AGENTLS_RETRY__MAX_RETRIES": "0"}
    done = run(prompt, project, env)
    assert done.returncode == 2
    assert "connection" in done.stderr and "what to do:" in done.stderr


def test_unconfigured_backend_and_missing_key_exit_2(
        server: ReplayServer, env: dict[str, str], project: Path, prompt: Path) -> None:
    unknown = run(prompt, project, env, "--backend", "nowhere")
    assert unknown.returncode == 2 and "no backend named 'nowhere'" in unknown.stderr
    keyless = run(prompt, project, {k: v for k, v in env.items() if k != "SCRIPTED_KEY"})
    assert keyless.returncode == 2 and "SCRIPTED_KEY" in keyless.stderr
    assert server.requests == []


def test_flags_override_config(server: ReplayServer, env: dict[str, str], project: Path,
                               prompt: Path) -> None:
    server.load({"models": "*", "steps": [{"match": {"model": "other-model"},
                                            "reply": {"text": "hi"}}]})
    done = run(prompt, project, env, "--model", "other-model", "--json")
    assert done.returncode == 0, done.stderr
    assert last_json(done.stdout)["model"] == "other-model"


def test_max_iterations_exit_4(server: ReplayServer, env: dict[str, str], project: Path,
                               prompt: Path) -> None:
    server.load({"steps": [{"times": "*", "reply": {"tool_calls": [
        call("list_files", "x", path="src")]}}]})
    done = run(prompt, project, env, "--max-iterations", "1", "--json")
    assert done.returncode == 4
    result = last_json(done.stdout)
    assert result["stopReason"] == "max-iterations" and result["status"] == "incomplete"


def test_a_refusal_and_a_cut_answer_are_not_done(
        server: ReplayServer, env: dict[str, str], project: Path, prompt: Path) -> None:
    server.load({"steps": [{"reply": {"refusal": "I won't."}}]})
    done = run(prompt, project, env, "--json")
    assert done.returncode == 1, done.stderr
    result = last_json(done.stdout)
    assert result["stopReason"] == "refusal" and result["status"] == "failed"
    assert result["text"] == "I won't." and result["error"]["kind"] == "refusal"
    server.load({"steps": [{"times": "*", "reply": {"text": "and ",
                                                    "finish_reason": "length"}}]})
    done = run(prompt, project, env, "--json")
    assert done.returncode == 1, done.stderr
    result = last_json(done.stdout)
    assert result["stopReason"] == "max-tokens" and result["status"] == "incomplete"
    assert "output limit" in result["error"]["message"]


def test_timeout_exit_75(server: ReplayServer, env: dict[str, str], project: Path,
                         prompt: Path) -> None:
    server.load({"steps": [{"reply": {"text": "too late", "first_delay_s": 30}}]})
    done = run(prompt, project, env, "--timeout", "300ms", "--json")
    assert done.returncode == 75, done.stderr
    assert last_json(done.stdout)["stopReason"] == "timeout"


def test_bad_duration_is_a_usage_error(env: dict[str, str], project: Path,
                                       prompt: Path) -> None:
    done = run(prompt, project, env, "--timeout", "soon")
    assert done.returncode == 64 and "90s, 2m, 1h" in done.stderr


# --- approvals -----------------------------------------------------------------------------------


def shell_steps(command: str) -> dict[str, Any]:
    return {"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("shell_exec", "s1", command=command)]}},
        {"match": {"tool": "shell_exec"}, "reply": {"text": "ran it"}},
    ]}


def test_ask_permissions_are_denied_without_a_tty_or_yes(
        server: ReplayServer, env: dict[str, str], project: Path, prompt: Path) -> None:
    server.load(shell_steps("echo approved-run"))
    done = run(prompt, project, {**env, "AGENTLS_SANDBOX__ASK": "true"})
    assert done.returncode == 0, done.stderr
    assert tool_results(server.requests[1].body)["s1"]["error"] == "USER_REJECTED"


def test_yes_approves_ask_permissions(server: ReplayServer, env: dict[str, str], project: Path,
                                      prompt: Path) -> None:
    server.load(shell_steps("echo approved-run"))
    done = run(prompt, project, {**env, "AGENTLS_SANDBOX__ASK": "true"}, "--yes")
    assert done.returncode == 0, done.stderr
    result = tool_results(server.requests[1].body)["s1"]
    assert result["ok"] and "approved-run" in result["stdout"]
    assert "approved by --yes: Run `echo approved-run`?" in done.stderr


def test_yes_approves_on_a_session_a_ci_run_created(
        server: ReplayServer, env: dict[str, str], project: Path, prompt: Path) -> None:
    server.load(shell_steps("echo first"))
    first = run(prompt, project, env, "--json")  # no TTY, no --yes: an automation session
    session = json.loads(first.stdout)["sessionId"]
    server.load(shell_steps("echo second"))
    done = run(prompt, project, env, "--session", session, "--yes")
    assert done.returncode == 0, done.stderr
    result = tool_results(server.requests[-1].body)["s1"]
    assert result["ok"] and "second" in result["stdout"]


# --- artifacts -----------------------------------------------------------------------------------


def test_artifacts_hold_meta_transcript_and_result_without_secrets(
        server: ReplayServer, env: dict[str, str], project: Path, prompt: Path) -> None:
    write(project / ".env", f"SCRIPTED_KEY={SECRET}\n")
    server.load({"api_key": SECRET, "steps": [
        {"match": {"tool_results": False}, "reply": {"text": "Checking.", "tool_calls": [
            call("read_file", "r1", path=".env"),
            call("shell_exec", "s1", command="echo key=$SCRIPTED_KEY; env"),
        ]}},
        *fix_add_steps()[1:],
        {"match": {"tool": "shell_exec"}, "reply": {"tool_calls": [
            call("edit_file", "c2", path="src/calc.py",
                 edits=[{"search": "return a - b", "replace": "return a + b"}])]}},
    ]})
    done = run(prompt, project, env, "--artifacts", "--json", "--yes")
    assert done.returncode == 0, done.stderr
    result = last_json(done.stdout)
    folder = Path(result["artifactsDir"])
    assert folder.parent == project / ".agentls" / "runs"
    assert ":" not in folder.name and folder.name.endswith(folder.name[-6:])
    assert sorted(p.name for p in folder.iterdir()) == ["meta.json", "result.json",
                                                         "transcript.ndjson"]

    meta = json.loads((folder / "meta.json").read_text())
    assert meta["backend"] == "scripted" and meta["model"] == "scripted-model"
    assert meta["options"]["yes"] is True and meta["timings"]["durationMs"] > 0
    assert "SCRIPTED_KEY" not in json.dumps(meta) and "env" not in meta
    assert json.loads((folder / "result.json").read_text()) == result

    lines = [json.loads(line) for line in (folder / "transcript.ndjson").read_text().splitlines()]
    kinds = {line["kind"] for line in lines}
    assert {"status", "text", "toolCall", "toolResult", "edit", "done", "result"} <= kinds
    assert all(isinstance(line["t"], int) for line in lines)

    refused = tool_results(server.requests[1].body)["r1"]
    assert refused["ok"] is False  # the fence keeps .env away from the model
    everything = [done.stdout, done.stderr]
    everything += [p.read_text() for p in folder.iterdir()]
    everything.append((project / ".agentls" / "state.db").read_bytes().decode("latin-1"))
    for text in everything:
        assert SECRET not in text


def test_unwritable_artifacts_folder_exit_73(server: ReplayServer, env: dict[str, str],
                                             project: Path, prompt: Path) -> None:
    (project / ".agentls").mkdir()
    write(project / ".agentls" / "runs", "a file where the runs folder should be")
    done = run(prompt, project, env, "--artifacts")
    assert done.returncode == 73
    assert "--cwd" in done.stderr and "--artifacts-dir" in done.stderr
    assert server.requests == []  # it fails before asking the model anything


def test_artifacts_dir_under_a_file_exit_73_with_json(
        env: dict[str, str], project: Path, prompt: Path, tmp_path: Path) -> None:
    blocker = write(tmp_path / "blocker", "")
    done = run(prompt, project, env, "--artifacts-dir", str(blocker / "runs"), "--json")
    assert done.returncode == 73
    result = last_json(done.stdout)
    assert result["stopReason"] == "artifacts-error" and result["artifactsDir"] is None


# --- interruption and conflicts ------------------------------------------------------------------


def start(prompt: Path, project: Path, env: dict[str, str], *flags: str
          ) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-P", "-m", "agentls", "run", str(prompt), "--cwd", str(project), *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env=env, start_new_session=True)


def wait_for_line(process: subprocess.Popen[str], fragment: str) -> list[str]:
    assert process.stderr is not None
    seen: list[str] = []
    for line in process.stderr:
        seen.append(line)
        if fragment in line:
            return seen
    raise AssertionError(f"{fragment!r} never appeared on stderr: {''.join(seen)}")


def test_sigint_exit_130_saves_the_session_and_writes_nothing(
        server: ReplayServer, env: dict[str, str], project: Path, prompt: Path) -> None:
    server.load({"steps": [
        {"match": {"tool_results": False}, "reply": {"tool_calls": [
            call("write_file", "w1", path="src/new.py", content="x = 1\n"),
            call("edit_file", "e1", path="src/calc.py",
                 edits=[{"search": "return a - b", "replace": "return a + b"}])]}},
        {"match": {"tool_results": True}, "reply": {"text": "never sent", "first_delay_s": 30}},
    ]})
    before = (project / "src" / "calc.py").read_bytes()
    process = start(prompt, project, env, "--json")
    wait_for_line(process, "thinking (step 2)")
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    result = last_json(stdout)
    assert result["stopReason"] == "interrupted" and result["applied"] is False
    assert [c["path"] for c in result["changes"]] == ["src/new.py", "src/calc.py"]
    assert (project / "src" / "calc.py").read_bytes() == before
    assert not (project / "src" / "new.py").exists()
    assert not [p for p in (project / "src").iterdir() if p.name.startswith(".")]

    shown = agentls("sessions", "show", result["sessionId"], "--json", "--cwd", str(project),
                    env=env)
    assert shown.returncode == 0, shown.stderr
    messages = json.loads(shown.stdout)["messages"]
    roles = [m["role"] for m in messages]
    assert roles[:4] == ["user", "assistant", "tool", "tool"]
    assert messages[1]["toolCalls"][0]["name"] == "write_file"


def test_conflict_writes_nothing_and_exits_1(
        server: ReplayServer, env: dict[str, str], project: Path, prompt: Path) -> None:
    steps = fix_add_steps()
    steps[2]["reply"]["first_delay_s"] = 3  # time for the test to change calc.py meanwhile
    server.load({"steps": steps})
    process = start(prompt, project, env, "--json")
    wait_for_line(process, "thinking (step 3)")
    changed = "def add(a, b):\n    return b - a  # edited meanwhile\n"
    write(project / "src" / "calc.py", changed)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 1, stderr
    result = last_json(stdout)
    assert result["stopReason"] == "conflict" and result["applied"] is False
    assert "calc.py" in result["error"]["message"]
    assert (project / "src" / "calc.py").read_text() == changed


def test_windows_safe_run_ids() -> None:
    from agentls.cli.artifacts import new_run_id

    run_id = new_run_id(0)
    assert run_id.startswith("19700101T000000Z-") and len(run_id) == 23
    assert not set(run_id) & set('<>:"/\\|?*')


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
def test_sigint_before_the_model_answers_first_token(
        server: ReplayServer, env: dict[str, str], project: Path, prompt: Path) -> None:
    server.load({"steps": [{"reply": {"text": "slow", "first_delay_s": 30}}]})
    process = start(prompt, project, env)
    wait_for_line(process, "thinking (step 1)")
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    assert "interrupted" in stderr and "Traceback" not in stderr


@pytest.mark.skipif(os.name == "nt", reason="needs a pseudo-terminal")
@pytest.mark.parametrize(("answer", "allowed"), [("y", True), ("n", False)])
def test_on_a_terminal_the_person_is_asked(server: ReplayServer, env: dict[str, str],
                                           project: Path, prompt: Path, answer: str,
                                           allowed: bool) -> None:
    import threading

    server.load(shell_steps("echo approved-run"))
    controller, terminal = os.openpty()
    os.write(controller, f"{answer}\n".encode())  # typed ahead; read when the prompt asks
    process = subprocess.Popen(
        [sys.executable, "-P", "-m", "agentls", "run", str(prompt), "--cwd", str(project)],
        stdin=terminal, stdout=subprocess.PIPE, stderr=terminal,
        env={**env, "TERM": "xterm", "AGENTLS_SANDBOX__ASK": "true"},
        start_new_session=True)
    os.close(terminal)
    screen = bytearray()

    def drain() -> None:
        while True:
            try:
                data = os.read(controller, 4096)
            except OSError:  # the terminal closed with the process
                return
            if not data:
                return
            screen.extend(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    stdout, _ = process.communicate(timeout=60)
    reader.join(timeout=10)
    os.close(controller)
    assert process.returncode == 0, screen.decode(errors="replace")
    assert b"Run `echo approved-run`?" in screen and b"Allow? [y]es once" in screen
    result = tool_results(server.requests[1].body)["s1"]
    assert result["ok"] is allowed
    assert stdout == b"ran it\n"


def test_artifacts_failing_mid_run_exit_73_and_nothing_written(
        server: ReplayServer, env: dict[str, str], project: Path, prompt: Path) -> None:
    import shutil

    steps = fix_add_steps()
    steps[2]["reply"]["first_delay_s"] = 3  # time for the test to pull the folder away
    server.load({"steps": steps})
    process = start(prompt, project, env, "--artifacts", "--json")
    wait_for_line(process, "thinking (step 3)")
    shutil.rmtree(project / ".agentls" / "runs")
    write(project / ".agentls" / "runs", "now a file")
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 73, stderr
    result = last_json(stdout)
    assert result["stopReason"] == "artifacts-error" and result["applied"] is False
    assert "--cwd" in result["error"]["message"]
    assert (project / "src" / "calc.py").read_text().endswith("return a - b\n")


def test_a_key_in_any_named_variable_is_redacted(server: ReplayServer, env: dict[str, str],
                                                 project: Path, prompt: Path) -> None:
    planted = "planted-auth-value-0123456789"  # the variable's name says nothing of a key
    env = {**env, "AGENTLS_BACKENDS__SCRIPTED__API_KEY_ENV": "SCRIPTED_AUTH",
           "SCRIPTED_AUTH": planted}
    server.load({"api_key": planted, "steps": [{"reply": {"text": f"it is {planted}"}}]})
    done = run(prompt, project, env, "--json", "--artifacts")
    assert done.returncode == 0, done.stderr
    result = last_json(done.stdout)
    assert result["text"] == "it is [REDACTED]"
    for path in Path(result["artifactsDir"]).iterdir():
        assert planted not in path.read_text()


def test_a_stream_cut_mid_answer_is_a_backend_error(server: ReplayServer, env: dict[str, str],
                                                    project: Path, prompt: Path) -> None:
    server.load({"steps": [{"reply": {"text": "a long answer that is cut", "chunk_size": 4},
                            "drop_after": 3}]})
    done = run(prompt, project, env, "--json")
    result = last_json(done.stdout)
    assert done.returncode == 1 and result["stopReason"] == "backend-error"
    assert "cut off" in result["error"]["hint"]
