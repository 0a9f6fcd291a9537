"""The prompt of a headless run (``agentls run`` / ``loop``): typed on the command line, piped
in with ``-``, or read from a file (looked up in the current folder, then the workspace). A
prompt that is missing or empty stops the run before anything starts (``Stopped``)."""

from __future__ import annotations

import sys
from pathlib import Path

from agentls.cli.report import Stopped


def read_prompt(command: str, source: str, inline_prompt: str | None,
                prompt_problem: str | None, root: Path) -> str:
    """``source``: the prompt or task file, ``-`` or ``inline``; ``prompt_problem``: why the
    command line gives no usable prompt, if it does not."""
    if prompt_problem is not None:
        raise Stopped("usage", prompt_problem, f"see `agentls {command} --help`")
    if inline_prompt is not None:
        text, where = inline_prompt, "the command line"
    elif source == "-":
        text = sys.stdin.buffer.read().decode("utf-8-sig", errors="replace")
        where = "stdin"
    else:
        text, where = read_prompt_file(command, Path(source), root)
    if not text.strip():
        raise Stopped("prompt-not-found", f"the prompt from {where} is empty",
                      "write the prompt into the file, or pipe it in with `-`")
    return text


def read_prompt_file(command: str, path: Path, root: Path) -> tuple[str, str]:
    """The file's text and where it was found. Relative paths are looked up in the current
    folder, then in the workspace."""
    candidates = [path] if path.is_absolute() else [Path.cwd() / path, root / path]
    for candidate in dict.fromkeys(candidates):
        try:
            data = candidate.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            raise Stopped("prompt-not-found",
                          f"cannot read {candidate}: {exc.strerror or exc}",
                          "pass a readable file, or - to read the prompt from stdin"
                          ) from None
        return data.decode("utf-8-sig", errors="replace"), str(candidate)
    looked = " or ".join(str(c) for c in dict.fromkeys(candidates))
    hint = "check the path, or pass - to read the prompt from stdin"
    if command == "run":
        hint += f"; to send {str(path)!r} itself as the prompt, use -p"
    raise Stopped("prompt-not-found", f"prompt file not found: {looked}", hint)
