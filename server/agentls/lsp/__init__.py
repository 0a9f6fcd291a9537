"""AgentLS."""
