"""What an agent CLI prints, turned into text deltas, tool activity, usage and an error.

One parser per machine-readable format: Codex's ``codex exec --json`` JSONL events
(openai/codex ``docs/exec.md``), Claude Code's ``--output-format stream-json`` messages
(code.claude.com "Run Claude Code programmatically" and the Agent SDK message types), and
plain text for Copilot's ``-s`` mode. ``agentls.llm.agent_cli.backends`` runs the CLIs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from agentls.llm.messages import Usage


@dataclass(frozen=True)
class CliActivity:
    """What the CLI did besides talking: a status line, or a tool it started or finished."""

    kind: Literal["status", "tool_started", "tool_finished"]
    name: str = ""
    detail: str = ""
    ok: bool = True
    call_id: str = ""


TextCallback = Callable[[str], None]
ActivityCallback = Callable[[CliActivity], None]


class CliOutput:
    """Collects one run's text, usage and error while forwarding text and activity."""

    def __init__(self, on_text: TextCallback, on_event: ActivityCallback) -> None:
        self._on_text = on_text
        self._on_event = on_event
        self.parts: list[str] = []
        self.usage: Usage | None = None
        self.error = ""
        self.auth_failure = False
        self.session_id: str | None = None

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def say(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self._on_text(text)

    def new_paragraph(self) -> None:
        """Separate two messages so the second does not run on from the first's last word."""
        if self.parts and not self.parts[-1].endswith("\n"):
            self.say("\n")

    def status(self, message: str) -> None:
        if message.strip():
            self._on_event(CliActivity("status", detail=_short(message)))

    def started(self, name: str, detail: str, call_id: str) -> None:
        self._on_event(CliActivity("tool_started", name=name, detail=_short(detail),
                                   call_id=call_id))

    def finished(self, name: str, detail: str, call_id: str, *, ok: bool) -> None:
        self._on_event(CliActivity("tool_finished", name=name, detail=_short(detail), ok=ok,
                                   call_id=call_id))

    def add_usage(self, usage: Usage) -> None:
        self.usage = usage if self.usage is None else self.usage + usage

    def fail(self, message: str) -> None:
        if message and message not in self.error:
            self.error = f"{self.error}; {message}" if self.error else message

    def feed_line(self, line: str) -> None:
        line = line.strip()
        if not line:
            return
        try:
            event = json.loads(line)
        except ValueError:
            self.status(line)  # a stray log line on stdout
            return
        if isinstance(event, dict):
            self.handle(event)

    def feed_chunk(self, text: str) -> None:
        self.say(text)

    def handle(self, event: dict[str, Any]) -> None:
        """One JSON event; adapters with a JSON mode override this."""


class CodexOutput(CliOutput):
    def __init__(self, on_text: TextCallback, on_event: ActivityCallback) -> None:
        super().__init__(on_text, on_event)
        self._message_seen: dict[str, str] = {}

    def handle(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "thread.started":
            self.session_id = str(event.get("thread_id") or "") or None
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item")
            if isinstance(item, dict):
                self._item(str(kind), item)
        elif kind == "turn.completed":
            usage = event.get("usage")
            if isinstance(usage, dict):
                prompt = _int(usage.get("input_tokens"))
                completion = _int(usage.get("output_tokens"))
                self.add_usage(Usage(prompt, completion, prompt + completion))
        elif kind == "turn.failed":
            self.fail(_message_of(event.get("error")))
        elif kind == "error":
            self.fail(_message_of(event))

    def _item(self, phase: str, item: dict[str, Any]) -> None:
        kind = item.get("type") or item.get("item_type")
        item_id = str(item.get("id") or "")
        done = phase == "item.completed"
        if kind == "agent_message":
            self._message(item_id, str(item.get("text") or ""))
        elif kind == "reasoning" and done:
            self.status(str(item.get("text") or "").strip("*"))
        elif kind == "command_execution":
            command = str(item.get("command") or "")
            if phase == "item.started":
                self.started("shell", command, item_id)
            elif done:
                code = item.get("exit_code")
                ok = item.get("status") != "failed" and code in (0, None)
                suffix = f" (exit {code})" if code not in (0, None) else ""
                self.finished("shell", command + suffix, item_id, ok=ok)
        elif kind == "file_change" and done:
            changes = item.get("changes")
            summary = ", ".join(f"{c.get('kind', 'update')} {c.get('path', '?')}"
                                for c in (changes if isinstance(changes, list) else ())
                                if isinstance(c, dict))
            self.started("edit", summary, item_id)
            self.finished("edit", summary, item_id, ok=item.get("status") != "failed")
        elif kind == "mcp_tool_call":
            name = f"{item.get('server', 'mcp')}.{item.get('tool', '?')}"
            if phase == "item.started":
                self.started(name, "", item_id)
            elif done:
                self.finished(name, str(item.get("status") or ""), item_id,
                              ok=item.get("status") != "failed")
        elif kind == "web_search" and done:
            query = str(item.get("query") or "")
            self.started("web_search", query, item_id)
            self.finished("web_search", query, item_id, ok=True)
        elif kind == "todo_list" and done:
            items = [i for i in item.get("items") or () if isinstance(i, dict)]
            finished = sum(1 for i in items if i.get("completed"))
            self.status(f"plan: {finished}/{len(items)} steps done")
        elif kind == "error" and done:
            self.status(f"warning: {item.get('message', '')}")

    def _message(self, item_id: str, text: str) -> None:
        # agent_message may arrive whole (item.completed) or grow (item.updated): print only
        # what was not printed yet.
        seen = self._message_seen.get(item_id, "")
        delta = text[len(seen):] if text.startswith(seen) else text
        if not seen and delta:
            self.new_paragraph()
        self.say(delta)
        self._message_seen[item_id] = text


class ClaudeOutput(CliOutput):
    def __init__(self, on_text: TextCallback, on_event: ActivityCallback) -> None:
        super().__init__(on_text, on_event)
        self._tool_names: dict[str, str] = {}

    def handle(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            self.session_id = str(event.get("session_id") or "") or None
            model = event.get("model") or "default model"
            self.status(f"claude started ({model}, permission mode "
                        f"{event.get('permissionMode', 'default')})")
        elif kind == "assistant":
            self._assistant(event)
        elif kind == "user":
            message = event.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else ():
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    call_id = str(block.get("tool_use_id") or "")
                    self.finished(self._tool_names.get(call_id, "tool"),
                                  _block_text(block.get("content")), call_id,
                                  ok=not block.get("is_error"))
        elif kind == "result":
            self._result(event)

    def _assistant(self, event: dict[str, Any]) -> None:
        if event.get("error"):
            # e.g. "authentication_failed", "rate_limit" (Agent SDK assistant message errors)
            reason = str(event["error"])
            self.auth_failure = self.auth_failure or "auth" in reason
            self.fail(reason.replace("_", " "))
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        first_text = True
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                if first_text:
                    self.new_paragraph()
                    first_text = False
                self.say(str(block.get("text") or ""))
            elif block.get("type") == "tool_use":
                call_id = str(block.get("id") or "")
                name = str(block.get("name") or "tool")
                self._tool_names[call_id] = name
                self.started(name, _tool_input_summary(block.get("input")), call_id)

    def _result(self, event: dict[str, Any]) -> None:
        self.session_id = str(event.get("session_id") or "") or self.session_id
        usage = event.get("usage")
        if isinstance(usage, dict):
            prompt = sum(_int(usage.get(k)) for k in (
                "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
            completion = _int(usage.get("output_tokens"))
            self.add_usage(Usage(prompt, completion, prompt + completion))
        result = event.get("result")
        if event.get("is_error") or event.get("subtype", "success") != "success":
            errors = event.get("errors")
            detail = result if isinstance(result, str) and result else (
                "; ".join(map(str, errors)) if isinstance(errors, list) and errors
                else str(event.get("subtype") or "error"))
            self.fail(detail)
            if event.get("api_error_status") in (401, 403):
                self.auth_failure = True
        elif isinstance(result, str) and not self.parts:
            self.say(result)  # nothing streamed (no assistant text): the result is the answer


# --- helpers ------------------------------------------------------------------------------------


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _message_of(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("message") or value.get("error") or "")
    return str(value or "")


def _short(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _tool_input_summary(arguments: Any) -> str:
    if not isinstance(arguments, dict):
        return ""
    for key in ("command", "file_path", "path", "pattern", "url", "description"):
        if isinstance(arguments.get(key), str):
            return str(arguments[key])
    return json.dumps(arguments, ensure_ascii=False)
