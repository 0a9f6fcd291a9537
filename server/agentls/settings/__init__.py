"""AgentLS: settings."""
