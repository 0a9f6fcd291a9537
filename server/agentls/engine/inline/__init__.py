"""AgentLS: inline."""
