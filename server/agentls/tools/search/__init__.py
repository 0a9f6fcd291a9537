"""AgentLS: search."""
