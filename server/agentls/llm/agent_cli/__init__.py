"""AgentLS: agent_cli."""
