"""What the engine runs: the prompt and what goes with it (attachments, the chips and refusals
of the references, limits). One record every front door builds once and the engine reads:
the LSP server (lsp/features/chat.py, lsp/features/code_actions/action_runner.py, wrapped in
lsp/services/turn.py's ``TurnRequest``
with the editor's options), the ACP agent and the CLI. A leaf, light to import: the editor
builds it before the engine's modules are loaded."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentls.engine.prompt.levels import Attachments
    from agentls.llm.messages import Image


@dataclass
class RunRequest:
    prompt: str
    attachments: Attachments | None = None
    max_iterations: int | None = None
    timeout_s: float | None = None
    tools: Iterable[str] | None = None  # restrict the toolbox (code actions)
    use_cache: bool = True
    # What engine/prompt/references.py resolved: the chips of the attachments, and what it refused.
    chips: Sequence[Any] = ()  # references.Chip
    refused: Sequence[Any] = ()  # references.Refusal
    # Images for a model that takes them (backends.<name>.images): sent with this turn's
    # request only; the stored message keeps a note of each.
    images: Sequence[Image] = ()
