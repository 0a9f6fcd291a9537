"""Installed agent CLIs as backends: OpenAI Codex CLI, GitHub Copilot CLI, Claude Code.

An adapter finds its CLI on PATH, checks it is signed in (a fast, documented check), runs
one prompt non-interactively in the tool's machine-readable output mode, and turns what the
tool prints into text deltas and tool activity. These CLIs edit files themselves: nothing
here goes through a ChangeSet (``agentls.engine.external`` lists their changes from
``git status`` before and after the run).

Documentation followed, per tool:

* Codex — openai/codex ``docs/exec.md`` ("Non-interactive mode"): ``codex exec --json``
  prints JSONL events ``thread.started``, ``turn.started``, ``turn.completed`` (usage:
  input_tokens, cached_input_tokens, output_tokens), ``turn.failed`` (error.message),
  ``item.started|updated|completed`` with items ``agent_message``, ``reasoning``,
  ``command_execution``, ``file_change``, ``mcp_tool_call``, ``web_search``, ``todo_list``,
  ``error``, and a top-level ``error``; ``-s workspace-write`` allows edits in the workspace;
  ``CODEX_API_KEY`` authenticates ``codex exec``. The prompt is read from stdin when it is
  ``-`` (``codex exec --help``). Sign-in check: ``codex login status`` (codex-rs
  ``cli/src/login.rs``: exit 0 "Logged in using …", exit 1 "Not logged in").
* Copilot — docs.github.com "GitHub Copilot CLI programmatic reference" (``-p``/``--prompt``,
  ``-s`` prints only the agent's answer, ``--allow-all-tools``, ``--no-ask-user``,
  ``--model``) and "Authenticating GitHub Copilot CLI" (credentials, in order:
  COPILOT_GITHUB_TOKEN, GH_TOKEN, GITHUB_TOKEN, the system keychain from ``copilot login``,
  then the GitHub CLI's token — check with ``gh auth status``; classic ``ghp_`` PATs are not
  supported). Recent versions have a JSONL output mode whose event schema is not publicly
  documented, so we use the documented text mode and stream stdout as it comes.
* Claude Code — code.claude.com "Run Claude Code programmatically" (``-p``,
  ``--output-format stream-json`` with ``--verbose``, ``--permission-mode acceptEdits``,
  piped stdin as the prompt) and the Agent SDK message types (``system``/``init``,
  ``assistant`` with text and tool_use blocks, ``user`` with tool_result blocks, ``result``
  with subtype, is_error, result, usage, session_id; a failed API call comes as a result
  with ``is_error: true`` and the message in ``result``). Sign-in check: ``claude auth
  status`` (CLI reference: JSON with ``loggedIn``, exit 1 when signed out).

Secrets (DESIGN.md decision 10, seed RG-007). The child's environment is ours without any
variable whose name contains KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL, without
``AGENTLS_*`` and without every ``api_key_env`` agentls is configured with. Then only the
tool's own documented sign-in variables are put back — codex: CODEX_API_KEY; copilot:
COPILOT_GITHUB_TOKEN, GH_TOKEN, GITHUB_TOKEN, COPILOT_PROVIDER_API_KEY; claude:
ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN — and never one that
agentls itself names as an ``api_key_env``: our key stays ours. In particular
OPENAI_API_KEY, which codex would also read, is the variable of our default backend and is
never passed on; give codex a key through CODEX_API_KEY or ``codex login``. Cloud
credentials in the environment (AWS_*, GOOGLE_APPLICATION_CREDENTIALS) are not passed on
either; file-based ones (``~/.aws``, ``~/.codex``, ``~/.claude``) still work.

Processes run in their own process group, so a timeout or Ctrl-C stops the CLI and
everything it started (llm/agent_cli/process.py). It stays one module: the three adapters
share one run loop and the per-tool documentation notes above.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from agentls.llm.agent_cli.parse_output import (
    ActivityCallback,
    ClaudeOutput,
    CliOutput,
    CodexOutput,
    TextCallback,
)
from agentls.llm.agent_cli.process import (
    child_environment,
    feed_stdin,
    quick,
    read_stderr,
    read_stdout,
    spawn,
    stop,
)
from agentls.llm.messages import Usage

CliKind = Literal["codex", "copilot", "claude"]
CLI_KINDS: tuple[CliKind, ...] = ("codex", "copilot", "claude")
CliStatus = Literal["available", "missing", "unauthenticated", "unsupported"]
# What went wrong in a run, for the caller's exit code: auth/missing -> 2, failed -> 1,
# timeout -> 75.
FailureKind = Literal["auth", "missing", "failed", "timeout"]

AUTH_CHECK_TIMEOUT_S = 1.5
# Words CLIs use when a run fails for want of a valid sign-in.
_AUTH_FAILURE = re.compile(
    r"not logged in|not signed in|please run /login|run `?\w+ login|login required"
    r"|invalid[ _]api[ _]key|incorrect api key|unauthori[sz]ed|authentication|\b401\b|\b403\b"
    r"|no authentication information|copilot requests",
    re.IGNORECASE,
)

# Agent CLIs we recognise but have no adapter for: shown as `unsupported` when installed.
UNSUPPORTED_CLIS: dict[str, str] = {
    "gemini": "Gemini CLI",
    "cursor-agent": "Cursor Agent CLI",
}


@dataclass(frozen=True)
class Detection:
    status: CliStatus
    detail: str
    path: str | None = None


@dataclass
class ExternalResult:
    text: str
    exit_code: int | None  # the CLI's own; None when it never ran or was stopped
    usage: Usage | None = None
    failure: FailureKind | None = None
    message: str = ""  # what failed, in the CLI's words where it said
    session_id: str | None = None  # codex thread id / claude session id, when printed

    @property
    def ok(self) -> bool:
        return self.failure is None


# --- adapters -----------------------------------------------------------------------------------


@dataclass
class _Invocation:
    argv: list[str]
    stdin: bytes | None
    json_lines: bool


class AgentCli(ABC):
    """One installed agent CLI used as a backend."""

    kind: CliKind
    label: str  # the product's name, for people
    binary: str
    install_hint: str
    login_hint: str
    auth_env: tuple[str, ...]  # the tool's own documented sign-in variables

    def __init__(
        self,
        *,
        model: str | None = None,
        env: Mapping[str, str] | None = None,
        secret_names: Iterable[str] = (),
    ) -> None:
        self.model = model
        self._env = os.environ if env is None else env
        self._ours = tuple(n for n in secret_names if n)

    # --- environment and detection ---------------------------------------------------------

    def find(self) -> str | None:
        return shutil.which(self.binary, path=self._env.get("PATH"))

    def environment(self) -> dict[str, str]:
        """What the CLI's process gets: see the module docstring."""
        return child_environment(self._env, keep=self.auth_env, ours=self._ours)

    def _auth_token_var(self) -> str | None:
        env = self.environment()
        return next((name for name in self.auth_env if env.get(name)), None)

    async def detect(self, timeout: float = AUTH_CHECK_TIMEOUT_S) -> Detection:
        path = self.find()
        if path is None:
            return Detection("missing", f"`{self.binary}` is not on PATH")
        try:
            return await self._check_auth(path, timeout)
        except OSError as exc:
            return Detection("missing", f"cannot start {path}: {exc.strerror or exc}", path)

    @abstractmethod
    async def _check_auth(self, path: str, timeout: float) -> Detection: ...

    # --- running ---------------------------------------------------------------------------

    @abstractmethod
    def _invocation(self, path: str, prompt: str) -> _Invocation: ...

    def _output(self, on_text: TextCallback, on_event: ActivityCallback) -> CliOutput:
        return CliOutput(on_text, on_event)

    async def run(
        self,
        prompt: str,
        cwd: str | os.PathLike[str],
        on_text: TextCallback,
        on_event: ActivityCallback,
        *,
        timeout_s: float | None = None,
    ) -> ExternalResult:
        """Run ``prompt`` in ``cwd``, streaming as the CLI prints; the CLI edits files itself.

        Never raises for what the CLI does; ``asyncio.CancelledError`` stops the CLI and
        propagates.
        """
        path = self.find()
        if path is None:
            return ExternalResult("", None, failure="missing",
                                  message=f"`{self.binary}` is not on PATH")
        call = self._invocation(path, prompt)
        output = self._output(on_text, on_event)
        try:
            proc = await spawn(call.argv, os.fspath(cwd), self.environment(), stdin=call.stdin)
        except OSError as exc:
            return ExternalResult("", None, failure="missing",
                                  message=f"cannot start {path}: {exc.strerror or exc}")
        stderr = bytearray()
        try:
            async with asyncio.timeout(timeout_s):
                async with asyncio.TaskGroup() as group:
                    group.create_task(feed_stdin(proc, call.stdin))
                    group.create_task(read_stdout(proc, output, call.json_lines))
                    group.create_task(read_stderr(proc, stderr))
                code: int | None = await proc.wait()
        except TimeoutError:
            await stop(proc)
            return ExternalResult(output.text, None, output.usage, "timeout",
                                  f"{self.label} did not finish within {timeout_s:g} s",
                                  output.session_id)
        except BaseException:
            await stop(proc)
            raise
        return await self._outcome(output, code, bytes(stderr))

    async def _outcome(self, output: CliOutput, code: int | None, stderr: bytes) -> ExternalResult:
        err_text = stderr.decode("utf-8", errors="replace").strip()
        if code == 0 and not output.error:
            return ExternalResult(output.text, code, output.usage, session_id=output.session_id)
        message = output.error or _last_lines(err_text) or f"{self.label} exited with {code}"
        failure: FailureKind = "failed"
        if output.auth_failure or _AUTH_FAILURE.search(f"{output.error}\n{err_text}"):
            failure = "auth"
        else:
            # A failure the CLI did not explain: its own sign-in check says whether that is why.
            detection = await self.detect()
            if detection.status == "unauthenticated":
                failure, message = "auth", f"{message} ({detection.detail})"
        return ExternalResult(output.text, code, output.usage, failure, message,
                              output.session_id)


class CodexCli(AgentCli):
    kind: CliKind = "codex"
    label = "Codex CLI"
    binary = "codex"
    install_hint = "install it: npm install -g @openai/codex"
    login_hint = "run `codex login`, or set CODEX_API_KEY"
    auth_env = ("CODEX_API_KEY",)

    async def _check_auth(self, path: str, timeout: float) -> Detection:
        code, text = await quick([path, "login", "status"], self.environment(), timeout)
        if code == 0:
            # "Logged in using an API key - sk-…": keep the method, not the masked key.
            return Detection("available", _first_line(text).split(" - ")[0] or "logged in", path)
        token = self._auth_token_var()
        if token:
            return Detection("available", f"{token} is set", path)
        if code is None:
            return Detection("unauthenticated",
                             f"`codex login status` did not answer within {timeout:g} s", path)
        return Detection("unauthenticated", _first_line(text) or "not logged in", path)

    def _invocation(self, path: str, prompt: str) -> _Invocation:
        # Edits in the workspace (`--full-auto` until codex 0.169; tests/cli/test_codex_cli.py).
        argv = [path, "exec", "--json", "--sandbox", "workspace-write"]
        if self.model:
            argv += ["--model", self.model]
        # "-": the prompt comes on stdin (no quoting through npm's .cmd shim, no length limit).
        return _Invocation([*argv, "-"], prompt.encode("utf-8"), json_lines=True)

    def _output(self, on_text: TextCallback, on_event: ActivityCallback) -> CliOutput:
        return CodexOutput(on_text, on_event)


class CopilotCli(AgentCli):
    kind: CliKind = "copilot"
    label = "GitHub Copilot CLI"
    binary = "copilot"
    install_hint = "install it: npm install -g @github/copilot"
    login_hint = ("run `copilot login`, or set COPILOT_GITHUB_TOKEN to a fine-grained token "
                  "with the Copilot Requests permission")
    auth_env = ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "COPILOT_PROVIDER_API_KEY")

    async def _check_auth(self, path: str, timeout: float) -> Detection:
        env = self.environment()
        for name in ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"):
            value = env.get(name)
            if value:
                if value.startswith("ghp_"):
                    return Detection("unauthenticated", f"{name} holds a classic personal "
                                     "access token (ghp_), which Copilot CLI does not accept",
                                     path)
                return Detection("available", f"token from {name}", path)
        if env.get("COPILOT_PROVIDER_API_KEY"):
            return Detection("available", "own model provider (COPILOT_PROVIDER_API_KEY)", path)
        gh = shutil.which("gh", path=env.get("PATH"))
        if gh is not None:
            code, _ = await quick([gh, "auth", "status"], env, timeout)
            if code == 0:
                return Detection("available", "GitHub CLI token (`gh auth status`)", path)
        # `copilot login` keeps its token in the system keychain, which nothing documented
        # reads without starting copilot: report what we could check.
        return Detection(
            "unauthenticated",
            "no token in COPILOT_GITHUB_TOKEN, GH_TOKEN or GITHUB_TOKEN and `gh` is not "
            "signed in (a `copilot login` token in the system keychain cannot be checked)",
            path,
        )

    def _invocation(self, path: str, prompt: str) -> _Invocation:
        # --prompt=...: a prompt starting with "-" stays a value, not an option.
        argv = [path, f"--prompt={prompt}", "-s", "--allow-all-tools", "--no-ask-user"]
        if self.model:
            argv.append(f"--model={self.model}")
        return _Invocation(argv, None, json_lines=False)


class ClaudeCli(AgentCli):
    kind: CliKind = "claude"
    label = "Claude Code"
    binary = "claude"
    install_hint = "install it: npm install -g @anthropic-ai/claude-code"
    login_hint = "run `claude` and sign in with /login, or set ANTHROPIC_API_KEY"
    auth_env = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")

    async def _check_auth(self, path: str, timeout: float) -> Detection:
        code, text = await quick([path, "auth", "status"], self.environment(), timeout)
        status = _json_object(text)
        if status is not None and status.get("loggedIn") is True:
            return Detection("available", f"signed in ({status.get('authMethod') or 'yes'})",
                             path)
        token = self._auth_token_var()
        if token:
            return Detection("available", f"{token} is set", path)
        if status is not None and status.get("loggedIn") is False:
            return Detection("unauthenticated", "not signed in", path)
        if code == 0:
            return Detection("available", _first_line(text) or "signed in", path)
        if code is None:
            return Detection("unauthenticated",
                             f"`claude auth status` did not answer within {timeout:g} s", path)
        return Detection("unauthenticated", _first_line(text) or "not signed in", path)

    def _invocation(self, path: str, prompt: str) -> _Invocation:
        argv = [path, "-p", "--output-format", "stream-json", "--verbose",
                "--permission-mode", "acceptEdits"]
        if self.model:
            argv += ["--model", self.model]
        # The prompt on stdin: `claude -p` reads it from there when no argument is given.
        return _Invocation(argv, prompt.encode("utf-8"), json_lines=True)

    def _output(self, on_text: TextCallback, on_event: ActivityCallback) -> CliOutput:
        return ClaudeOutput(on_text, on_event)


_ADAPTERS: dict[CliKind, type[AgentCli]] = {
    "codex": CodexCli,
    "copilot": CopilotCli,
    "claude": ClaudeCli,
}


def adapter_for(
    kind: CliKind,
    *,
    model: str | None = None,
    env: Mapping[str, str] | None = None,
    secret_names: Iterable[str] = (),
) -> AgentCli:
    return _ADAPTERS[kind](model=model, env=env, secret_names=secret_names)


@dataclass(frozen=True)
class UnsupportedCli:
    name: str
    label: str
    path: str


def installed_unsupported(env: Mapping[str, str] | None = None) -> list[UnsupportedCli]:
    """Known agent CLIs on PATH that agentls cannot drive."""
    search = (os.environ if env is None else env).get("PATH")
    found = []
    for name, label in UNSUPPORTED_CLIS.items():
        path = shutil.which(name, path=search)
        if path is not None:
            found.append(UnsupportedCli(name, label, path))
    return found


# --- small helpers ------------------------------------------------------------------------------


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _last_lines(text: str, count: int = 3) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " / ".join(lines[-count:])


def _json_object(text: str) -> dict[str, Any] | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value = json.loads(text[start: end + 1])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
