"""AgentLS: sandbox."""
