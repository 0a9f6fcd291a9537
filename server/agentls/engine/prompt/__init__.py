"""AgentLS: prompt."""
