"""AgentLS: transport."""
