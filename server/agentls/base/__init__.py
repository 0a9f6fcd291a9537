"""AgentLS: base."""
