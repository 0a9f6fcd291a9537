"""What a session/new and a session/prompt carry, made into what the engine takes: the
session's folder (checked: it becomes the fence), the request's text (cut with a note when
huge), its attached files (resource links; embedded resources as the editor's text of the
file), its images (for a model that takes them), and the slash commands the client offers."""

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
    from agentls.llm.messages import Image
    from agentls.workspace.fence import Workspace

MAX_PROMPT_CHARS = 200_000  # beyond, the prompt text is cut with a note
MAX_IMAGE_BYTES = 20 * 1024 * 1024  # OpenAI's limit per image; a bigger one is left out
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")  # what vision APIs take
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


def prompt_parts(blocks: list[Any], workspace: Workspace
                 ) -> tuple[str, Any, list[str], list[Image]]:
    """The request's text, its attached files, notes for the person (what was cut or left
    out), and its images (whether the model takes them is the caller's to check)."""
    from agentls.engine.prompt.attachments import Attachments

    texts: list[str] = []
    files: list[str] = []
    notes: list[str] = []
    images: list[Image] = []
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
        elif isinstance(block, ImageContentBlock):
            image = _image(block, notes)
            if image is not None:
                images.append(image)
        elif isinstance(block, AudioContentBlock):
            notes.append("the audio was not sent to the model: AgentLS sends models text, "
                         "files and images only (its prompt capabilities say so); describe it "
                         "in words")
        else:
            notes.append(f"a {getattr(block, 'type', 'content')} block was not sent to the "
                         "model: AgentLS takes text and files")
    text = "\n".join(texts)
    if len(text) > MAX_PROMPT_CHARS:
        notes.append(f"the prompt was {len(text):,} characters; only its first "
                     f"{MAX_PROMPT_CHARS:,} were sent. Attach long material as files instead")
        text = text[:MAX_PROMPT_CHARS]
    return text, Attachments(files=tuple(files)), notes, images


def _image(block: ImageContentBlock, notes: list[str]) -> Image | None:
    from agentls.llm.messages import Image

    size = len(block.data) * 3 // 4
    if block.mime_type not in IMAGE_TYPES:
        notes.append(f"an image of type {block.mime_type} was not sent to the model: models "
                     f"take {', '.join(IMAGE_TYPES)}; convert it to one of those")
    elif size > MAX_IMAGE_BYTES:
        notes.append(f"an image of {size / 1024 / 1024:.0f} MB was not sent to the model (at "
                     f"most {MAX_IMAGE_BYTES // 1024 // 1024} MB each); send a smaller one")
    elif not block.data.strip():
        notes.append("an empty image was not sent to the model")
    else:
        return Image(block.mime_type, "".join(block.data.split()))
    return None


def _file_path(uri: str) -> Path | None:
    from urllib.parse import unquote, urlparse

    if uri.startswith("file://"):
        return Path(unquote(urlparse(uri).path))
    if os.path.isabs(uri):
        return Path(uri)
    return None


def _inside(path: Path, workspace: Workspace) -> bool:
    from agentls.workspace.fence import FenceError

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
