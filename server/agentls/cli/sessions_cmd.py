"""`agentls sessions [--json]` lists this workspace's sessions; `agentls sessions show ID`
prints one session's messages. ID may be any unique prefix of a session id.

Reading never creates anything: a workspace without ``.agentls/state.db`` has no sessions.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from agentls.cli import exitcodes
from agentls.engine.sessions.state_dir import STATE_DB, STATE_DIR
from agentls.engine.sessions.store import SessionInfo, SessionStore, StoredMessage

CONTENT_PREVIEW = 2_000  # characters of a message shown by `show` (--json has everything)


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("sessions", help="list this workspace's sessions, or show one")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--limit", type=_positive_int, default=50,
                        help="most sessions listed (50)")
    _add_cwd(parser)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    show = actions.add_parser("show", help="print one session's messages")
    show.add_argument("session_id", metavar="ID", help="a session id, or a unique prefix")
    show.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                      help="print one JSON object")
    _add_cwd(show)


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"expected a whole number above 0, got {text!r}")
    return int(text)


def _add_cwd(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: without the flag, the global -C/--cwd given before the command stands.
    parser.add_argument("-C", "--cwd", type=Path, default=argparse.SUPPRESS,
                        help="workspace folder (default: the current directory)")


def run(args: argparse.Namespace, workspace: Path) -> int:
    db = workspace / STATE_DIR / STATE_DB
    if not db.is_file():
        if args.action == "show":
            print(f"agentls sessions: no sessions in {workspace} yet", file=sys.stderr)
            return exitcodes.USAGE
        _print_list([], args.json, workspace)
        return exitcodes.OK
    try:
        with SessionStore(db, workspace_root=workspace) as store:
            if args.action == "show":
                return _show(store, args.session_id, args.json)
            _print_list(store.list_sessions(limit=args.limit), args.json, workspace)
    except sqlite3.Error as exc:
        print(f"agentls sessions: cannot read the session store {db}: {exc}. If it is "
              "damaged, move it aside; the next run starts a new one.", file=sys.stderr)
        return exitcodes.ARTIFACTS_UNWRITABLE
    return exitcodes.OK


def session_dict(info: SessionInfo) -> dict[str, Any]:
    return {
        "id": info.id, "title": info.title, "backend": info.backend, "model": info.model,
        "mode": info.mode, "createdAt": _iso(info.created_at), "updatedAt": _iso(info.updated_at),
        "messages": info.message_count, "metadata": info.metadata,
    }


def message_dict(stored: StoredMessage) -> dict[str, Any]:
    message = stored.message
    return {
        "seq": stored.seq, "kind": stored.kind, "role": message.role,
        "content": message.content, "createdAt": _iso(stored.created_at),
        "toolCalls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                      for c in message.tool_calls],
        "toolCallId": message.tool_call_id, "toolName": message.name,
        "metadata": stored.metadata,
    }


def _print_list(sessions: list[SessionInfo], as_json: bool, workspace: Path) -> None:
    if as_json:
        print(json.dumps({"workspace": str(workspace),
                          "sessions": [session_dict(s) for s in sessions]},
                         ensure_ascii=False, indent=2))
        return
    if not sessions:
        print(f"no sessions in {workspace}", file=sys.stderr)
        return
    from agentls.cli.tables import for_people, new_table, print_rows, table_console

    if not for_people():  # piped: id, updated, backend/model, mode, messages, title
        print_rows((info.id, _when(info.updated_at), f"{info.backend}/{info.model}", info.mode,
                    info.message_count, info.title or "") for info in sessions)
        return
    table = new_table()
    table.add_column("id", no_wrap=True, min_width=12)  # `sessions show` takes a prefix
    table.add_column("updated", no_wrap=True)
    table.add_column("backend/model", overflow="fold", ratio=2)
    table.add_column("mode", overflow="ellipsis", no_wrap=True)
    table.add_column("msgs", justify="right", no_wrap=True)
    table.add_column("title", overflow="ellipsis", no_wrap=True, ratio=3)
    for info in sessions:
        table.add_row(Text(info.id), _when(info.updated_at), Text(f"{info.backend}/{info.model}"),
                      info.mode, str(info.message_count), Text(info.title or "(untitled)"))
    table_console().print(table)


def _when(updated_at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(updated_at))


def _find(store: SessionStore, wanted: str) -> list[SessionInfo]:
    """The session called ``wanted``, else every session whose id starts with it."""
    found = store.get_session(wanted)
    if found is not None:
        return [found]
    return [s for s in store.list_sessions(limit=10_000) if s.id.startswith(wanted.upper())]


def _show(store: SessionStore, wanted: str, as_json: bool) -> int:
    found = _find(store, wanted)
    if len(found) > 1:
        print(f"agentls sessions: {wanted!r} is the start of {len(found)} sessions' ids; give "
              "more of the id (see `agentls sessions`)", file=sys.stderr)
        return exitcodes.USAGE
    if not found:
        print(f"agentls sessions: no session {wanted!r} in this workspace (an id or a unique "
              "prefix); list them with `agentls sessions`", file=sys.stderr)
        return exitcodes.USAGE
    info = found[0]
    history = store.history(info.id)
    if as_json:
        print(json.dumps({"session": session_dict(info),
                          "messages": [message_dict(m) for m in history]},
                         ensure_ascii=False, indent=2))
        return exitcodes.OK
    console = Console(highlight=False, soft_wrap=True)
    console.print(Text(f"{info.id}  {info.title or '(untitled)'}", style="bold"))
    console.print(Text(f"{info.backend}/{info.model} · {info.mode} · {info.message_count} "
                       f"messages · updated {_iso(info.updated_at)}", style="dim"))
    for stored in history:
        message = stored.message
        label = message.role if stored.kind == "message" else f"{message.role} ({stored.kind})"
        if message.role == "tool" and message.name:
            label = f"tool {message.name}"
        console.print()
        console.print(Text(f"#{stored.seq} {label}", style="bold cyan"))
        if message.content:
            content = message.content
            if len(content) > CONTENT_PREVIEW:
                content = content[:CONTENT_PREVIEW] + f"… ({len(message.content)} characters)"
            console.print(Text(content))
        for call in message.tool_calls:
            console.print(Text(f"→ {call.name} {call.arguments}", style="yellow"))
    return exitcodes.OK


def _iso(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))
