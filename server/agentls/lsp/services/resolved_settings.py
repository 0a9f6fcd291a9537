"""The settings the language server runs with: the engine's (validated ``Settings``), its own
(``LspSettings``), the client section as sent, and what was wrong with them. A leaf of the lsp
package, so ``context.py`` can name it without importing ``settings.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentls.settings.config import Settings


@dataclass(frozen=True)
class LspSettings:
    """Settings only the language server uses (not valid in config.toml)."""

    chat_requests_per_minute: int = 10  # per client; beyond it requests wait their turn
    chat_queue_limit: int = 32  # chat requests that may wait per session before refusing


@dataclass
class ResolvedSettings:
    settings: Settings
    lsp: LspSettings
    client: dict[str, Any]  # the merged client section, as sent (other features read it)
    problems: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # e.g. an untrusted project file
