"""AgentLS: shell."""
