"""AgentLS: edit."""
