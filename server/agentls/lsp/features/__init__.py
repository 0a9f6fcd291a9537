"""AgentLS: features."""
