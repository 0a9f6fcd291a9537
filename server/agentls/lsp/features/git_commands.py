"""``agentls.commitMessage`` and ``agentls.prDescription`` (seed 002).

``agentls.commitMessage`` answers a Conventional Commits message for the staged diff, as
text, its first line at most 72 characters whatever the model wrote.
``agentls.prDescription`` answers a Markdown description (Summary / Changes / Testing) of
the current branch against its base (``origin/HEAD``, ``origin/main``, ``origin/master``,
``main`` or ``master``, the first HEAD has commits beyond).

Both take an optional argument ``{root?: uri}`` (default: the first workspace folder);
prDescription also ``{base?: "develop"}``. Files the workspace fence hides never reach the
model. Problems (not a repository, nothing staged, no base, the model unreachable) are
error responses whose message says what to do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pygls.exceptions import JsonRpcException

from agentls.lsp.services import documents
from agentls.lsp.services.commands import register_command
from agentls.lsp.services.protocol import (
    CMD_COMMIT_MESSAGE,
    CMD_PR_DESCRIPTION,
    REQUEST_FAILED,
    ParamsError,
    plain,
)
from agentls.lsp.services.server_context import ServerContext
from agentls.lsp.services.turn import TurnRefused

if TYPE_CHECKING:
    from agentls.llm.messages import Message

T = TypeVar("T")


def _options(arguments: list[Any], command: str, keys: tuple[str, ...]) -> dict[str, Any]:
    options = plain(arguments[0]) if arguments else {}
    if options is None:
        return {}
    usage = ", ".join(f'"{k}": "..."' for k in keys)
    if not isinstance(options, dict) or set(options) - set(keys) or not all(
            isinstance(v, str) and v for v in options.values()):
        raise ParamsError(f"{command} takes no argument or {{{usage}}}")
    return options


def _root(ls: ServerContext, options: dict[str, Any]) -> Path:
    given = options.get("root")
    if given is not None:
        path = documents.path_of(given) if given.startswith("file:") else Path(given)
        if path is None:
            raise ParamsError(f"'root' must be a file: URI, got {given!r}")
        return path
    if ls.root is None:
        raise TurnRefused("AgentLS needs a workspace folder: open the repository's folder in "
                          "the editor, then try again.")
    return ls.root


async def _guarded(what: str, work: Callable[[], Awaitable[T]]) -> T:
    """``work()`` with git and model problems turned into error responses for the person."""
    from agentls.llm.backend import BackendError
    from agentls.tools.git.read import GitError

    try:
        return await work()
    except GitError as exc:
        raise JsonRpcException(message=f"AgentLS could not write {what}: {exc.message}",
                               code=REQUEST_FAILED, data={"kind": exc.code}) from None
    except BackendError as exc:
        hint = f" {exc.hint}" if exc.hint else ""
        raise JsonRpcException(message=f"AgentLS could not write {what}: {exc}.{hint}",
                               code=REQUEST_FAILED, data={"kind": exc.kind}) from None


async def _ask_model(ls: ServerContext, messages: list[Message]) -> str:
    from agentls.llm.messages import ChatRequest

    host = await ls.engine()
    # A second request for the same diff should give a fresh answer: no cache.
    response = await host.pool.get().complete(ChatRequest(messages), use_cache=False)
    return response.text


def _visible(ls: ServerContext) -> Callable[[Path], bool]:
    from agentls.workspace.fence import Workspace

    return Workspace(ls.roots).is_visible if ls.roots else (lambda _: True)


async def commit_message_command(ls: ServerContext, arguments: list[Any]) -> str:
    from agentls.engine.prompt.git_prompts import commit_message_messages, repair_commit_message
    from agentls.tools.git.branch_changes import staged_changes

    root = _root(ls, _options(arguments, CMD_COMMIT_MESSAGE, ("root",)))

    async def work() -> str:
        changes = await staged_changes(root, _visible(ls))
        answer = await _ask_model(ls, commit_message_messages(changes.diff, changes.stat,
                                                              changes.hidden))
        return repair_commit_message(answer, changes.paths)

    return await _guarded("a commit message", work)


async def pr_description_command(ls: ServerContext, arguments: list[Any]) -> str:
    from agentls.engine.prompt.git_prompts import pr_description_messages, repair_pr_description
    from agentls.tools.git.branch_changes import branch_changes

    options = _options(arguments, CMD_PR_DESCRIPTION, ("root", "base"))
    root = _root(ls, options)

    async def work() -> str:
        found = await branch_changes(root, _visible(ls), options.get("base"))
        changes = found.changes
        answer = await _ask_model(ls, pr_description_messages(
            found.branch, found.base, found.commits, changes.diff, changes.stat,
            changes.hidden))
        return repair_pr_description(answer)

    return await _guarded("a pull request description", work)


def setup(server: ServerContext) -> None:
    register_command(server, CMD_COMMIT_MESSAGE, commit_message_command)
    register_command(server, CMD_PR_DESCRIPTION, pr_description_command)
