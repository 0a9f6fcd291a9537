"""AgentLS: workspace."""
