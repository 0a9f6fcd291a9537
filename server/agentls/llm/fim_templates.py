"""Fill-in-the-middle prompt templates of the common code models, chosen by model name.

A server that accepts ``suffix`` on ``/v1/completions`` (Ollama) applies the model's own
template; vLLM and llama.cpp take the raw prompt, so AgentLS writes it: the model's special
tokens around the prefix and the suffix, other files of the repository in the model's
repo-level format where it has one (Qwen2.5-Coder ``<|repo_name|>`` / ``<|file_sep|>``,
StarCoder2 ``<repo_name>`` / ``<file_sep>``), else as commented file headers. Each template
names its stop tokens, so generation ends where the model would start another file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_PLACEHOLDER = re.compile(r"\{(prefix|suffix)\}")


@dataclass(frozen=True)
class ContextFile:
    """Another file's text the model may read: its workspace-relative path and a snippet."""

    path: str
    text: str


@dataclass(frozen=True)
class FimTemplate:
    name: str
    stop: tuple[str, ...]
    custom: str = ""  # the person's own template text (name "custom")

    def render(self, prefix: str, suffix: str, *, path: str = "", repo: str = "",
               files: Sequence[ContextFile] = (), comment: str = "#") -> str:
        """The prompt for ``prefix`` ▮ ``suffix`` in the file ``path`` of ``repo``."""
        if self.name == "qwen":
            head = ""
            if files:
                head = f"<|repo_name|>{repo}\n" + "".join(
                    f"<|file_sep|>{f.path}\n{f.text}\n" for f in files) + f"<|file_sep|>{path}\n"
            return f"{head}<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>"
        if self.name == "starcoder2":
            if files:
                head = f"<repo_name>{repo}" + "".join(
                    f"<file_sep>{f.path}\n{f.text}" for f in files)
                return (f"{head}<file_sep><fim_prefix>{path}\n{prefix}<fim_suffix>{suffix}"
                        "<fim_middle>")
            return f"<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>"
        headed = commented_files(files, comment) + prefix
        if self.name == "deepseek":
            return f"<｜fim▁begin｜>{headed}<｜fim▁hole｜>{suffix}<｜fim▁end｜>"
        if self.name == "codellama":
            return f"<PRE> {headed} <SUF>{suffix} <MID>"
        if self.name == "codestral":
            return f"[SUFFIX]{suffix}[PREFIX]{headed}"
        values = {"prefix": headed, "suffix": suffix}
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], self.custom)


def commented_files(files: Sequence[ContextFile], comment: str) -> str:
    """Other files as a preamble of the prefix, each under a comment naming its path."""
    return "".join(f"{comment} {f.path}\n{f.text.rstrip()}\n\n" for f in files)


TEMPLATES: dict[str, FimTemplate] = {
    # Most likely first: servers may take only the first four (the rest stop client-side).
    "qwen": FimTemplate("qwen", ("<|endoftext|>", "<|file_sep|>", "<|fim_pad|>",
                                 "<|repo_name|>", "<|fim_prefix|>", "<|fim_suffix|>",
                                 "<|fim_middle|>", "<|im_end|>")),
    "starcoder2": FimTemplate("starcoder2", ("<|endoftext|>", "<file_sep>", "<repo_name>",
                                             "<fim_prefix>", "<fim_suffix>", "<fim_middle>")),
    "deepseek": FimTemplate("deepseek", ("<｜end▁of▁sentence｜>", "<｜fim▁begin｜>",
                                         "<｜fim▁hole｜>", "<｜fim▁end｜>", "<|EOT|>")),
    "codellama": FimTemplate("codellama", ("<EOT>", "<PRE>", "<SUF>", "<MID>", "</s>")),
    "codestral": FimTemplate("codestral", ("[PREFIX]", "[SUFFIX]", "</s>")),
}

# Model-name fragments, most specific first (lower-cased, "-", "_", "." and ":" removed).
_BY_NAME: tuple[tuple[str, str], ...] = (
    ("qwen25coder", "qwen"), ("qwen2.5coder", "qwen"), ("qwencoder", "qwen"),
    ("qwen3coder", "qwen"), ("starcoder", "starcoder2"), ("deepseekcoder", "deepseek"),
    ("codellama", "codellama"), ("codestral", "codestral"),
)


class TemplateError(ValueError):
    """A template setting that cannot be used; the message says what would work."""


def template_for(model: str, override: str = "") -> FimTemplate | None:
    """The template the ``completion.template`` setting names (a name or the person's own
    text with ``{prefix}`` and ``{suffix}``), else the one the model's name suggests, else
    None (no template known: the request needs ``suffix`` support or a chat model)."""
    wanted = override.strip()
    if wanted:
        if wanted.lower() in TEMPLATES:
            return TEMPLATES[wanted.lower()]
        if "{prefix}" not in wanted:
            names = ", ".join(TEMPLATES)
            raise TemplateError(f"completion.template {wanted!r} is neither a known template "
                                f"({names}) nor a text with {{prefix}} (and {{suffix}})")
        return FimTemplate("custom", (), wanted)
    squashed = re.sub(r"[-_:.\s/]", "", model.lower())
    for fragment, name in _BY_NAME:
        if fragment.replace(".", "") in squashed:
            return TEMPLATES[name]
    return None
