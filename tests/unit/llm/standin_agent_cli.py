"""A stand-in for the agent CLIs in tests: codex, claude, copilot, gh and gemini in one program.

`install_standins` (below) puts one small executable per name in a folder; each runs this
file, which acts by the name it was called as and the scenario written in ``standin.json``
beside it: ``ok``, ``unauthenticated``, ``failing`` or ``hang``. What it prints follows the
tools' public documentation (see agentls.llm.agent_cli.backends): codex's ``exec --json`` JSONL
events, Claude Code's ``stream-json`` messages, Copilot's ``-s`` text. Every call is logged
to ``calls.jsonl`` with its arguments, stdin, folder and environment.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()


def install_standins(folder: Path, scenarios: dict[str, str]) -> Path:
    """Executables named after ``scenarios``' keys in ``folder``; returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "standin.json").write_text(json.dumps(scenarios))
    for name in scenarios:
        script = folder / name
        script.write_text(
            f"#!{sys.executable}\n"
            "import runpy\n"
            f"runpy.run_path({str(HERE)!r}, init_globals={{'SELF': {str(script)!r}}}, "
            "run_name='__main__')\n"
        )
        script.chmod(0o755)
    return folder


def calls(folder: Path) -> list[dict[str, object]]:
    log = folder / "calls.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line]


# --- the stand-in itself ------------------------------------------------------------------------


def emit(event: dict[str, object]) -> None:
    print(json.dumps(event), flush=True)


def edit_workspace() -> list[str]:
    """What the agent 'does': fixes calc.py when there is one, and writes NOTES.md."""
    touched = []
    calc = Path("calc.py")
    if calc.exists():
        calc.write_text(calc.read_text().replace("a - b", "a + b"))
        touched.append("calc.py")
    Path("NOTES.md").write_text("fixed add\nchecked tests\n")
    touched.append("NOTES.md")
    return touched


def codex(args: list[str], scenario: str, stdin: str) -> int:
    if args[:2] == ["login", "status"]:
        if scenario == "hang":
            time.sleep(600)
        if scenario == "unauthenticated":
            print("Not logged in", file=sys.stderr)
            return 1
        print("Logged in using an API key - sk-proj-***ABCDE", file=sys.stderr)
        return 0
    if args[:1] != ["exec"]:
        print(f"error: unexpected arguments {args}", file=sys.stderr)
        return 2
    emit({"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"})
    emit({"type": "turn.started"})
    if scenario == "hang":
        time.sleep(600)
    if scenario == "unauthenticated":
        emit({"type": "error", "message": "unexpected status 401 Unauthorized: Missing bearer "
              "or basic authentication in header"})
        emit({"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized"}})
        return 1
    if scenario == "failing":
        emit({"type": "error", "message": "stream disconnected before completion"})
        emit({"type": "turn.failed", "error": {"message": "stream disconnected before "
                                                          "completion"}})
        return 1
    emit({"type": "item.completed",
          "item": {"id": "item_0", "type": "reasoning", "text": "**Reading calc.py**"}})
    emit({"type": "item.started", "item": {"id": "item_1", "type": "command_execution",
                                           "command": "bash -lc 'cat calc.py'",
                                           "aggregated_output": "", "status": "in_progress"}})
    emit({"type": "item.completed", "item": {"id": "item_1", "type": "command_execution",
                                             "command": "bash -lc 'cat calc.py'",
                                             "aggregated_output": "def add(a, b): ...\n",
                                             "exit_code": 0, "status": "completed"}})
    touched = edit_workspace()
    emit({"type": "item.completed", "item": {
        "id": "item_2", "type": "file_change", "status": "completed",
        "changes": [{"path": str(Path(p).resolve()), "kind": "update"} for p in touched]}})
    emit({"type": "item.completed", "item": {
        "id": "item_3", "type": "agent_message",
        "text": f"You asked: {stdin.strip()}\nFixed add() in calc.py.\nDONE"}})
    emit({"type": "turn.completed",
          "usage": {"input_tokens": 24763, "cached_input_tokens": 24448, "output_tokens": 122}})
    return 0


def claude(args: list[str], scenario: str, stdin: str) -> int:
    if args[:2] == ["auth", "status"]:
        if scenario == "hang":
            time.sleep(600)
        logged_in = scenario != "unauthenticated"
        print(json.dumps({"loggedIn": logged_in,
                          "authMethod": "claude.ai" if logged_in else "none",
                          "apiProvider": "firstParty"}, indent=2))
        return 0 if logged_in else 1
    if "-p" not in args or "stream-json" not in args or "--verbose" not in args:
        print("Error: When using --print, --output-format=stream-json requires --verbose",
              file=sys.stderr)
        return 1
    session = "8f2d1c9e-5b7a-4e1f-9c3d-2a6b8e0f1d4c"
    emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": session,
          "tools": ["Bash", "Edit", "Read", "Write"], "mcp_servers": [],
          "model": "claude-sonnet-4-5", "permissionMode": "acceptEdits",
          "apiKeySource": "none"})
    if scenario == "hang":
        time.sleep(600)
    if scenario in ("unauthenticated", "failing"):
        text = ("Invalid API key · Please run /login" if scenario == "unauthenticated"
                else "Tool execution failed: Edit could not write calc.py")
        emit({"type": "result", "subtype": "success" if scenario == "unauthenticated"
              else "error_during_execution", "is_error": True, "duration_ms": 120,
              "num_turns": 1, "result": text, "session_id": session, "total_cost_usd": 0,
              "usage": {"input_tokens": 0, "output_tokens": 0}})
        return 1
    emit({"type": "assistant", "session_id": session, "parent_tool_use_id": None, "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": f"Task: {stdin.strip()}. Let me fix calc.py."},
                    {"type": "tool_use", "id": "toolu_01", "name": "Edit",
                     "input": {"file_path": str(Path("calc.py").resolve()),
                               "old_string": "a - b", "new_string": "a + b"}}]}})
    edit_workspace()
    emit({"type": "user", "session_id": session, "parent_tool_use_id": None, "message": {
        "role": "user", "content": [{"tool_use_id": "toolu_01", "type": "tool_result",
                                     "content": "The file calc.py has been updated."}]}})
    emit({"type": "assistant", "session_id": session, "parent_tool_use_id": None, "message": {
        "id": "msg_02", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Fixed it.\nDONE"}]}})
    emit({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 2300,
          "num_turns": 3, "result": "Fixed it.\nDONE", "session_id": session,
          "total_cost_usd": 0.0123,
          "usage": {"input_tokens": 10, "cache_creation_input_tokens": 200,
                    "cache_read_input_tokens": 300, "output_tokens": 42}})
    return 0


def copilot(args: list[str], scenario: str) -> int:
    prompt = next((a.split("=", 1)[1] for a in args if a.startswith("--prompt=")), None)
    if prompt is None:
        print("error: missing --prompt", file=sys.stderr)
        return 1
    if scenario == "unauthenticated":
        print("Error: No authentication information found.\nTo authenticate, run "
              "`copilot login` or set COPILOT_GITHUB_TOKEN.", file=sys.stderr)
        return 1
    if scenario == "failing":
        print("Error: the model request failed (HTTP 500)", file=sys.stderr)
        return 1
    if scenario == "hang":
        time.sleep(600)
    print(f"Working on: {prompt}", flush=True)
    edit_workspace()
    print("Created NOTES.md and fixed calc.py.\nDONE", flush=True)
    return 0


def gh(args: list[str], scenario: str) -> int:
    if scenario == "ok":
        print("github.com\n  ✓ Logged in to github.com account octocat (keyring)")
        return 0
    print("You are not logged into any GitHub hosts. To log in, run: gh auth login",
          file=sys.stderr)
    return 1


def main() -> int:
    me = Path(globals().get("SELF", sys.argv[0]))  # the name it was installed as
    scenario = json.loads((me.parent / "standin.json").read_text())[me.name]
    args = sys.argv[1:]
    stdin = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    with (me.parent / "calls.jsonl").open("a") as log:
        log.write(json.dumps({"name": me.name, "argv": args, "stdin": stdin,
                              "cwd": os.getcwd(), "env": dict(os.environ)}) + "\n")
    if me.name == "codex":
        return codex(args, scenario, stdin)
    if me.name == "claude":
        return claude(args, scenario, stdin)
    if me.name == "copilot":
        return copilot(args, scenario)
    if me.name == "gh":
        return gh(args, scenario)
    print(f"{me.name} 0.1.0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
