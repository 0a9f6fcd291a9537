"""AgentLS: an LLM coding agent inside any editor that speaks LSP."""

__version__ = "0.1.0"
