"""AgentLS: services."""
