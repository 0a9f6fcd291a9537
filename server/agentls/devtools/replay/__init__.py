"""AgentLS: replay."""
