"""What a session/new and a session/prompt carry, made into what the engine takes: the
session's folder (checked: it becomes the fence), the request's text (cut with a note when
huge), its attached files (resource links; embedded resources as the editor's text of the
file), and the slash commands the client offers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from acp import RequestError, update_agent_message_text

if TYPE_CHECKING:
    from agentls.tools.workspace import Workspace

MAX_PROMPT_CHARS = 200_000  # beyond, the prompt text is cut with a note
SLASH_COMMANDS = {
    "fix": ("Fix the problem you describe (or the failing tests) and show the change",
            "Fix this problem in the code, then explain the fix briefly: "),
    "docs": ("Write or improve documentation for the code you name",
             "Write or improve the documentation (docstrings, comments) for: "),
    "tests": ("Write tests for the code you name", "Write tests for: "),
    "explain": ("Explain the code you name", "Explain this code clearly and concisely: "),
    "commit-message": ("Write a commit message for the uncommitted changes",
                       "Read the uncommitted changes (git_status, git_diff) and write a "
                       "commit message for them: a short summary line, a blank line, then "
                       "what changed and why. "),
}


def workspace_folder(cwd: str) -> Path:
    """The session's folder: absolute, existing, a folder, and not one no project is (``/``,
    the home folder), since it becomes the fence of everything the agent may touch."""
    if not cwd or not os.path.isabs(cwd):
        raise RequestError.invalid_params({"message": f"cwd must be an absolute path to the "
                                           f"project folder (got {cwd!r})"})
    path = Path(cwd)
    if not path.exists():
        raise RequestError.invalid_params({"message": f"cwd {cwd} does not exist: open a "
                                           "project folder that exists"})
    if not path.is_dir():
        raise RequestError.invalid_params({"message": f"cwd {cwd} is a file, not a folder: "
                                           "use the folder of the project it belongs to"})
    real = path.resolve()
    if real == Path(real.anchor) or real == Path.home().resolve():
        raise RequestError.invalid_params({"message": f"cwd {cwd} is too wide to be a project "
                                           "folder (the agent could read and change everything "
                                           "under it): open the project's own folder"})
    return real


def prompt_parts(blocks: list[Any], workspace: Workspace) -> tuple[str, Any, list[str]]:
    """The request's text, its attached files, and notes for the person (what was cut)."""
    from agentls.engine.attachments import Attachments

    texts: list[str] = []
    files: list[str] = []
    notes: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            files.append(block.uri)
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                path = _file_path(resource.uri)
                if path is not None and _inside(path, workspace):
                    # The editor's text of the file (perhaps unsaved): the agent reads that.
                    workspace.open_document(path, resource.text, 0)
                    files.append(str(path))
                else:
                    texts.append(f"\n[{resource.uri}]\n{resource.text}\n")
            else:
                notes.append(f"{resource.uri} was not sent to the model: only text resources "
                             "are supported")
        elif isinstance(block, (ImageContentBlock, AudioContentBlock)):
            notes.append(f"the {block.type} was not sent to the model: AgentLS sends models "
                         "text and files only (its prompt capabilities say so); describe it in "
                         "words, or attach the file it shows")
        else:
            notes.append(f"a {getattr(block, 'type', 'content')} block was not sent to the "
                         "model: AgentLS takes text and files")
    text = "\n".join(texts)
    if len(text) > MAX_PROMPT_CHARS:
        notes.append(f"the prompt was {len(text):,} characters; only its first "
                     f"{MAX_PROMPT_CHARS:,} were sent. Attach long material as files instead")
        text = text[:MAX_PROMPT_CHARS]
    return text, Attachments(files=tuple(files)), notes


def _file_path(uri: str) -> Path | None:
    from urllib.parse import unquote, urlparse

    if uri.startswith("file://"):
        return Path(unquote(urlparse(uri).path))
    if os.path.isabs(uri):
        return Path(uri)
    return None


def _inside(path: Path, workspace: Workspace) -> bool:
    from agentls.tools.workspace import FenceError

    try:
        workspace.resolve(str(path))
    except (FenceError, OSError, ValueError):
        return False
    return True


def expand_slash_command(text: str) -> str:
    stripped = text.lstrip()
    if not stripped.startswith("/"):
        return text
    name, _, rest = stripped[1:].partition(" ")
    command = SLASH_COMMANDS.get(name)
    if command is None:
        return text
    return command[1] + (rest.strip() or "the code in this project")


def error_text(message: str) -> Any:
    return update_agent_message_text(f"AgentLS: {message}\n")
