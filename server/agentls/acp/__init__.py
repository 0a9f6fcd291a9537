"""`agentls acp`: the agent over the Agent Client Protocol (Zed, JetBrains, Emacs agent-shell,
avante.nvim, CodeCompanion), through the official SDK (``agent-client-protocol``, ``import
acp``). A sibling of ``lsp/`` on the same engine host (DESIGN.md decision 14): it imports
``engine/`` and below, never ``lsp/``."""
