"""AgentLS: git."""
