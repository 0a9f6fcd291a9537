"""AgentLS: loop."""
